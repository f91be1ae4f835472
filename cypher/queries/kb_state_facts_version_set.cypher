// A consolidation of namespace $kb is done: its facts version becomes $next, if it is still
// $expected (null: none yet) — another writer's change meanwhile leaves it, and the consolidating
// process then forgets what it remembers (`ours` false).
MATCH (s:KbState {kb: $kb})
WITH s, coalesce(s.facts_version, '') = coalesce($expected, '') AS ours
SET s.facts_version = CASE WHEN ours THEN $next ELSE s.facts_version END
RETURN ours;
