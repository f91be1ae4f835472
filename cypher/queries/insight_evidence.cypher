// What backs the insights of some concepts: the concepts $concept_ids and those already in the
// meta-concepts $meta_ids (namespace $kb). Per insight: its text and the runs, tasks, runs that
// succeeded and runs whose fix went through that it was learnt from.
CALL () {
  UNWIND $concept_ids AS concept_id
  RETURN concept_id
  UNION
  UNWIND $meta_ids AS meta_id
  MATCH (c:Concept {kb: $kb})-[:INSTANCE_OF]->(:MetaConcept {kb: $kb, id: meta_id})
  RETURN c.id AS concept_id
}
MATCH (i:Insight {kb: $kb, concept_id: concept_id})
RETURN i.text AS text, coalesce(i.runs, []) AS runs, coalesce(i.tasks, []) AS tasks,
  coalesce(i.succeeded, []) AS succeeded, coalesce(i.worked, []) AS worked;
