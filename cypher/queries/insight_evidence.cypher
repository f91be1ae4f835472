// What backs the insights of some concepts: the concepts $concept_ids and those already in the
// meta-concepts $meta_ids (namespace $kb). Per insight: its concept (and, for a concept read
// through a meta-concept, that meta-concept), its text, its record (what it says, as JSON; null for
// a free lesson) and the runs, tasks, runs that succeeded
// and runs whose next call went through that it was learnt from; and its origins, the domain, runs
// and task of each experience it came from (so that its evidence splits by domain).
CALL () {
  UNWIND $concept_ids AS concept_id
  RETURN concept_id, null AS meta_id
  UNION
  UNWIND $meta_ids AS meta_id
  MATCH (c:Concept {kb: $kb})-[:INSTANCE_OF]->(:MetaConcept {kb: $kb, id: meta_id})
  RETURN c.id AS concept_id, meta_id
}
MATCH (i:Insight {kb: $kb, concept_id: concept_id})
CALL (i) {
  OPTIONAL MATCH (i)-[:FROM]->(e:Experience)
  WITH e ORDER BY e.id
  RETURN collect({domain: coalesce(e.domain, 'general'), runs: coalesce(e.source_ids, []), task: e.task_key})
    AS origins
}
RETURN concept_id, meta_id, i.text AS text, i.record AS record, coalesce(i.runs, []) AS runs, coalesce(i.tasks, []) AS tasks,
  coalesce(i.succeeded, []) AS succeeded, coalesce(i.worked, []) AS worked, origins
ORDER BY concept_id, text;
