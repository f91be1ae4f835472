// Student search, the way past a failed step: the experiences of namespace $kb (passing the
// filters: $statuses, $domains, $kinds, $min_success, $min_quality, scope / $agent) holding a
// failure mode with the error signature $signature (the same error on the same action, values
// masked) from a run outside $exclude, each with whether the fix then went through (`recovered`)
// and whether that run succeeded; the failure mode shown is the best resolved of the experience's.
MATCH (f:FailureMode {kb: $kb, signature: $signature})<-[:HAS_FAILURE]-(e:Experience {kb: $kb})
WHERE NOT coalesce(f.run_id, '') IN $exclude AND NOT e.id IN $exclude
  AND e.status IN $statuses
  AND ($domains IS NULL OR e.domain IN $domains)
  AND ($kinds IS NULL OR e.kind IN $kinds)
  AND coalesce(e.success_rate, 0.0) >= $min_success
  AND coalesce(e.quality, 0.0) >= $min_quality
  AND (coalesce(e.scope, 'shared') = 'shared' OR e.owner_agent = $agent)
WITH e, f ORDER BY coalesce(f.run_succeeded, false) DESC, coalesce(f.recovered, false) DESC, f.id
WITH e, collect(f)[0] AS f
RETURN e.id AS id, f.id AS failure, f.description AS description, coalesce(f.recovery, '') AS recovery,
  coalesce(f.recovered, false) AS recovered, coalesce(f.run_succeeded, false) AS run_succeeded;
