// One experience in full: what was it, how did it go, what did it teach, what is it related to?
//
// Returns one row: the experience's fields (no embedding vectors), its steps in order, its failure
// modes with their recoveries, the concepts reflected from it (each with the meta-concept it was
// deduplicated into and the insight learned), and its relations to other experiences in both
// directions (ABSTRACTION, COMPOSITION, ADAPTATION, ALTERNATIVE, with weight and reason).
// No row when the id is not in the namespace.
//
// @param kb "default" — the namespace (kbgraph cypher run fills it from --namespace / settings)
// @param id required — the experience's id (from search results, `kbgraph get`, or top_by_utility)
//
// In cypher-shell or Neo4j Browser set the parameters first (kbgraph demo's namespace is "demo"):
// :param kb => "default"
// :param id => "PASTE-AN-EXPERIENCE-ID"
MATCH (e:Experience {kb: $kb, id: $id})
CALL (e) {
  OPTIONAL MATCH (e)-[:HAS_STEP]->(s:Step {kb: $kb})
  WITH s ORDER BY s.order
  RETURN collect(s {.order, .action, .text, .args_schema, .reward, .issue_type, .resolution_effectiveness}) AS steps
}
CALL (e) {
  OPTIONAL MATCH (e)-[:HAS_FAILURE]->(f:FailureMode {kb: $kb})
  WITH f ORDER BY f.step_order, f.id
  RETURN collect(f {.step_order, .issue_type, .description, .recovery}) AS failure_modes
}
CALL (e) {
  OPTIONAL MATCH (i:Insight {kb: $kb})-[:FROM]->(e)
  OPTIONAL MATCH (c:Concept {kb: $kb, id: i.concept_id})
  OPTIONAL MATCH (c)-[:INSTANCE_OF]->(m:MetaConcept {kb: $kb})
  WITH i, c, m ORDER BY m.name, c.label, i.text
  RETURN collect(CASE WHEN i IS NULL THEN NULL
    ELSE {concept: coalesce(c.label, i.concept), meta_concept: m.name, insight: i.text} END) AS concepts
}
CALL (e) {
  OPTIONAL MATCH (e)-[r:ABSTRACTION|COMPOSITION|ADAPTATION|ALTERNATIVE]-(other:Experience {kb: $kb})
  WITH r, other ORDER BY type(r), other.id
  RETURN collect(CASE WHEN r IS NULL THEN NULL
    ELSE {type: type(r), direction: CASE WHEN startNode(r) = e THEN 'outgoing' ELSE 'incoming' END,
          other_id: other.id, other_domain: other.domain, other_kind: other.kind,
          weight: r.weight, reason: r.reason, inferred: r.inferred} END) AS relations
}
RETURN e {.id, .problem, .goal, .domain, .difficulty, .kind, .status, .scope, .owner_agent, .source,
          .success_rate, .quality, .efficiency, .generalizability, .retrieved, .used, .succeeded,
          .usage_impact, .usage_impact_at, .created_at, .last_used_at,
          sources: size(coalesce(e.source_ids, []))} AS experience,
  steps, failure_modes, concepts, relations;
