// Adds $added experiences (written without kb_state_growth_counted: 0 after a counted write) to
// namespace $kb's growth total and marks the total checked: returns the total when it was last
// checked and now, so the caller can tell whether a maintenance checkpoint was crossed in between
// — by this run, or by an earlier one that crashed before its check. Locked before read:
// concurrent callers each see their own step, and exactly one of them sees a crossing.
MERGE (s:KbState {kb: $kb})
ON CREATE SET s.added_total = 0
SET s._lock = true
WITH s, coalesce(s.growth_checked, s.added_total, 0) AS before, coalesce(s.added_total, 0) + $added AS after
SET s.added_total = after, s.growth_checked = after
REMOVE s._lock
RETURN before, after;
