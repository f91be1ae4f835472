// Teacher phase: every error signature (the same error on the same action, values masked) of
// namespace $kb's active experiences within the caller's scope and $domains, leaving out
// $exclude_runs, with its two parts as stored (null on failure modes stored before they were kept).
// The caller reads each one's error class from its parts (the same error on any action), so that
// every failure of a class is counted, not only those near the query.
MATCH (e:Experience {kb: $kb})-[:HAS_FAILURE]->(f:FailureMode {kb: $kb})
WHERE f.signature IS NOT NULL AND e.status = 'active' AND NOT coalesce(f.run_id, '') IN $exclude_runs
  AND ($domains IS NULL OR toLower(e.domain) IN $domains)
  AND (coalesce(e.scope, 'shared') = 'shared' OR e.owner_agent = $agent)
RETURN f.signature AS signature, min(f.signature_action) AS signature_action,
  min(f.signature_error) AS signature_error;
