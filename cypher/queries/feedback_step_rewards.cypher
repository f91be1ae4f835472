// Feedback (MAEL): adds one reward in [-1, 1] to steps of experiences; a step's reward is the mean
// of every reward reported for it (a reward set at ingestion counts as one report).
// $kb; $rewards: [{experience_id, order, reward}]. Locked before read, like the counters.
UNWIND $rewards AS r
MATCH (:Experience {kb: $kb, id: r.experience_id})-[:HAS_STEP]->(s:Step {order: r.order})
SET s._lock = true
WITH s, r, coalesce(s.reward_count, CASE WHEN s.reward IS NULL THEN 0 ELSE 1 END) AS n
SET s.reward = (coalesce(s.reward, 0.0) * n + r.reward) / (n + 1), s.reward_count = n + 1
REMOVE s._lock
RETURN s.id AS id;
