// Counts $added new experiences in namespace $kb's state node (created on first use) and returns
// the totals before and after, so the caller can tell whether a maintenance checkpoint was
// crossed. Locked before read: concurrent writers each see their own step.
MERGE (s:KbState {kb: $kb})
ON CREATE SET s.added_total = 0
SET s._lock = true
WITH s, coalesce(s.added_total, 0) AS before
SET s.added_total = before + $added
REMOVE s._lock
RETURN before, s.added_total AS after;
