// Feedback: one attempt (and a success when $outcome >= 0.5) of agent $agent in domain $domain,
// namespace $kb: the cells of the ability matrix (EDV). Locked before read, like the counters.
MERGE (a:Agent {kb: $kb, id: $agent})
ON CREATE SET a.name = $agent
MERGE (d:Domain {kb: $kb, name: $domain})
MERGE (a)-[p:PERFORMED]->(d)
SET p._lock = true
WITH p
SET p.attempts = coalesce(p.attempts, 0) + 1,
    p.successes = coalesce(p.successes, 0) + CASE WHEN $outcome >= 0.5 THEN 1 ELSE 0 END,
    p.last_at = $now
REMOVE p._lock
RETURN p.attempts AS attempts, p.successes AS successes;
