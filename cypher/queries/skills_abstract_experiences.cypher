// Skills export: the active abstract experiences (workflows) of namespace $kb, with the uses and
// successes agents reported for them through feedback (their instances' runs are read with
// skills_experiences).
MATCH (a:Experience {kb: $kb})
WHERE a.kind = 'abstract' AND coalesce(a.status, 'active') = 'active' AND coalesce(a.scope, 'shared') = 'shared'
RETURN a.id AS id, coalesce(a.domain, 'general') AS domain, coalesce(a.operations, []) AS operations,
  coalesce(a.used, 0) AS used, coalesce(a.succeeded, 0) AS succeeded
ORDER BY id;
