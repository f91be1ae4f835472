// Skills export: every active, shared concrete experience of namespace $kb that has evidence (runs
// it was learnt from, or uses an agent reported through feedback), with what puts it into a
// workflow (domain and operations, the state-changing actions in order), its runs and their
// outcomes, its task, the active abstract experience it instantiates and the meta-concepts it
// exhibits. No steps: the export reads those only for the experiences it writes about.
MATCH (e:Experience {kb: $kb})
WHERE e.kind = 'concrete' AND coalesce(e.status, 'active') = 'active' AND coalesce(e.scope, 'shared') = 'shared'
  AND (size(coalesce(e.source_ids, [])) > 0 OR coalesce(e.used, 0) > 0)
CALL (e) {
  OPTIONAL MATCH (e)-[:ABSTRACTION]->(a:Experience {kb: $kb})
  WHERE a.kind = 'abstract' AND coalesce(a.status, 'active') = 'active'
  RETURN min(a.id) AS abstract_id
}
CALL (e) {
  OPTIONAL MATCH (e)-[:EXHIBITS]->(m:MetaConcept {kb: $kb})
  WITH m ORDER BY m.id
  RETURN collect(m.id) AS meta_ids
}
RETURN e.id AS id, e.problem AS problem, coalesce(e.domain, 'general') AS domain,
  coalesce(e.actions, []) AS actions, coalesce(e.operations, []) AS operations, e.task_key AS task_key,
  coalesce(e.source_ids, []) AS source_ids, coalesce(e.failed_source_ids, []) AS failed_source_ids,
  coalesce(e.used, 0) AS used, coalesce(e.succeeded, 0) AS succeeded, abstract_id, meta_ids
ORDER BY id;
