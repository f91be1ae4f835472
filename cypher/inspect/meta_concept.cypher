// Meta-concept neighbourhood: what does a concept document say, and what is it built from?
//
// The meta-concept's document, the raw concepts deduplicated into it (INSTANCE_OF), the insights
// about it (ABOUT) and the experiences that exhibit it (EXHIBITS).
//
// One row. `document` is the concept document (when to use / why / how / pitfalls). The lists hold
// nodes and `links` the relationships between them and the meta-concept, so Neo4j Browser draws the
// neighbourhood as a graph; `kbgraph cypher run` prints each node by its name, label or text.
// Each kind of neighbour is cut at $limit (most recent experiences are not preferred: by id).
//
// @param kb "default" — the namespace (kbgraph cypher run fills it from --namespace / settings)
// @param name required — the meta-concept's name or id (see MetaConcept.name, or `kbgraph demo`)
// @param limit 25 — at most this many concepts, insights and experiences each
//
// In cypher-shell or Neo4j Browser set the parameters first (kbgraph demo's namespace is "demo"):
// :param kb => "default"
// :param name => "PASTE-A-META-CONCEPT-NAME"
// :param limit => 25
MATCH (m:MetaConcept {kb: $kb})
WHERE m.name = $name OR m.id = $name
CALL (m) {
  OPTIONAL MATCH (c:Concept {kb: $kb})-[r:INSTANCE_OF]->(m)
  WITH c, r ORDER BY c.label, c.id LIMIT $limit
  RETURN collect(c) AS concepts, collect(r) AS concept_links
}
CALL (m) {
  OPTIONAL MATCH (i:Insight {kb: $kb})-[r:ABOUT]->(m)
  WITH i, r ORDER BY i.text, i.id LIMIT $limit
  RETURN collect(i) AS insights, collect(r) AS insight_links
}
CALL (m) {
  OPTIONAL MATCH (e:Experience {kb: $kb})-[r:EXHIBITS]->(m)
  WITH e, r ORDER BY e.id LIMIT $limit
  RETURN collect(e) AS experiences, collect(r) AS experience_links
}
RETURN m.name AS name, m.id AS id, m.version AS version, m.document AS document, m AS meta_concept,
  concepts, insights, experiences, concept_links + insight_links + experience_links AS links
ORDER BY name, id;
