// A consolidation of namespace $kb is done: its facts version becomes $next, if it is still
// $expected (null: none yet) — another writer's change meanwhile leaves it, and the consolidating
// process then forgets what it remembers (`ours` false).
// $entry: the experiences whose facts the consolidation changed (ingest/link_state/_log.py),
// appended to the facts log, of which the last $entries are kept; null (no version before, or too
// many to follow) empties the log: no process can follow from a version before it.
MATCH (s:KbState {kb: $kb})
WITH s, coalesce(s.facts_version, '') = coalesce($expected, '') AS ours
SET s.facts_version = CASE WHEN ours THEN $next ELSE s.facts_version END,
    s.facts_log = CASE
      WHEN NOT ours THEN s.facts_log
      WHEN $entry IS NULL THEN []
      ELSE (coalesce(s.facts_log, []) + [$entry])[-$entries..]
    END
RETURN ours;
