// AutoRefine merge: each group's duplicates fold into its canonical experience (provenance and
// counters already combined in $groups), their insights, meta-concepts and failure modes move
// over, and the duplicates are deleted with their steps.
// $kb; $groups: [{canonical, merged_ids, source_ids, failed_source_ids, retrieved, used, succeeded, success_rate}]
UNWIND $groups AS g
MATCH (c:Experience {kb: $kb, id: g.canonical})
SET c.source_ids = g.source_ids, c.failed_source_ids = g.failed_source_ids, c.retrieved = g.retrieved, c.used = g.used, c.succeeded = g.succeeded,
    c.success_rate = g.success_rate,
    c.merged_ids = coalesce(c.merged_ids, []) + [m IN g.merged_ids WHERE NOT m IN coalesce(c.merged_ids, [])]
WITH c, g
UNWIND g.merged_ids AS merged_id
MATCH (o:Experience {kb: $kb, id: merged_id})
CALL (o, c) {
  OPTIONAL MATCH (i:Insight)-[:FROM]->(o)
  WITH c, collect(i) AS insights
  FOREACH (i IN insights | MERGE (i)-[:FROM]->(c))
}
CALL (o, c) {
  OPTIONAL MATCH (o)-[:EXHIBITS]->(m:MetaConcept)
  WITH c, collect(m) AS metas
  FOREACH (m IN metas | MERGE (c)-[:EXHIBITS]->(m))
}
CALL (o, c) {
  OPTIONAL MATCH (o)-[:HAS_FAILURE]->(f:FailureMode)
  WITH c, collect(f) AS failures
  FOREACH (f IN failures | MERGE (c)-[:HAS_FAILURE]->(f) SET f.experience_id = c.id)
}
CALL (o) {
  OPTIONAL MATCH (o)-[:HAS_STEP]->(s:Step)
  DETACH DELETE s
}
DETACH DELETE o
RETURN count(*) AS merged;
