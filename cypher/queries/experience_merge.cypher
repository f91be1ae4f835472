// AutoRefine merge: each group's duplicates fold into its canonical experience, their insights,
// meta-concepts, failure modes and task outcomes move over, and the duplicates are deleted with
// their steps. The plan ($groups) decides who merges and what the merged provenance says; the
// learning state is added up HERE, from the nodes as they are once this transaction holds their
// write locks, so feedback committed after the plan was made is counted, never overwritten.
// Each merged-away id stays in the survivor's `merged_ids` (with the ids it had absorbed itself):
// feedback naming it lands on the survivor.
// $kb; $groups: [{canonical, merged_ids, source_ids, failed_source_ids, success_rate}]
UNWIND $groups AS g
MATCH (c:Experience {kb: $kb, id: g.canonical})
SET c._lock = true
WITH c, g WHERE c.id IS NOT NULL
// A member deleted by a merge that committed while we waited for its lock reads as a node without
// properties: it is skipped (its state already lives on in that merge's survivor).
CALL (c, g) {
  UNWIND g.merged_ids AS merged_id
  MATCH (o:Experience {kb: $kb, id: merged_id})
  WHERE o <> c
  SET o._lock = true
  WITH o WHERE o.id IS NOT NULL
  RETURN collect(o) AS members
}
WITH c, g, members, [c] + members AS all
WITH c, g, members,
  reduce(n = 0, x IN all | n + coalesce(x.retrieved, 0)) AS retrieved,
  reduce(n = 0, x IN all | n + coalesce(x.used, 0)) AS used,
  reduce(n = 0, x IN all | n + coalesce(x.succeeded, 0)) AS succeeded,
  // Quality is the mean over members weighted by their uses: one never used says nothing yet.
  reduce(q = 0.0, x IN all | q + coalesce(x.quality, 0.5) * coalesce(x.used, 0)) AS quality_mass,
  reduce(i = 0.0, x IN all | i + coalesce(x.usage_impact, 0.0)) AS usage_impact,
  reduce(t = null, x IN all | CASE WHEN x.usage_impact_at IS NOT NULL AND (t IS NULL OR x.usage_impact_at > t)
                                   THEN x.usage_impact_at ELSE t END) AS usage_impact_at,
  reduce(t = null, x IN all | CASE WHEN x.last_used_at IS NOT NULL AND (t IS NULL OR x.last_used_at > t)
                                   THEN x.last_used_at ELSE t END) AS last_used_at,
  reduce(ids = coalesce(c.merged_ids, []), x IN members |
         ids + [i IN [x.id] + coalesce(x.merged_ids, []) WHERE NOT i IN ids]) AS merged_ids
SET c.source_ids = g.source_ids, c.failed_source_ids = g.failed_source_ids, c.success_rate = g.success_rate,
    c.retrieved = retrieved, c.used = used, c.succeeded = succeeded,
    c.quality = CASE WHEN used > 0 THEN quality_mass / used ELSE c.quality END,
    c.usage_impact = CASE WHEN usage_impact_at IS NULL THEN c.usage_impact ELSE usage_impact END,
    c.usage_impact_at = usage_impact_at, c.last_used_at = last_used_at, c.merged_ids = merged_ids
REMOVE c._lock
WITH c, members
UNWIND members AS o
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
CALL (o, c) {
  OPTIONAL MATCH (o)-[:HAD_OUTCOME]->(t:Outcome)
  WITH c, collect(t) AS outcomes
  FOREACH (t IN outcomes | MERGE (c)-[:HAD_OUTCOME]->(t))
}
CALL (o) {
  OPTIONAL MATCH (o)-[:HAS_STEP]->(:Step)-[:SAYS]->(v:StepText)
  RETURN collect(DISTINCT v) AS texts
}
CALL (o) {
  OPTIONAL MATCH (o)-[:HAS_STEP]->(s:Step)
  DETACH DELETE s
}
DETACH DELETE o
// The merged members' step vectors (StepText) no step says any more go, under their write lock
// (see experience_delete).
WITH collect(texts) AS texts, count(*) AS merged
CALL (texts) {
  UNWIND texts AS some
  UNWIND some AS v
  WITH DISTINCT v
  SET v._lock = true
  WITH v WHERE v.kb IS NOT NULL
  REMOVE v._lock
  WITH v WHERE COUNT { (v)<-[:SAYS]-() } = 0
  DELETE v
}
RETURN merged;
