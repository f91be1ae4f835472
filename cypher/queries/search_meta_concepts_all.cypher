// Student search, concept documents kept by the search version (kbgraph.search.student.kept_concepts):
// namespace $kb's search version, read first, then every meta-concept with an embedding, its
// document, how many raw concepts it merges and how many experiences exhibit it (as
// search_meta_concepts_scan returns them, with the embedding instead of a score). Every write of a
// meta-concept or an EXHIBITS edge gives the namespace a new search version, so the rows read are
// kept under the version read before them; the process ranks them as the scan does.
OPTIONAL MATCH (state:KbState {kb: $kb})
WITH state.search_version AS version
RETURN version, COLLECT {
  MATCH (m:MetaConcept {kb: $kb})
  WHERE m.embedding IS NOT NULL
  RETURN {id: m.id, name: m.name, document: m.document, embedding: m.embedding,
    concepts: coalesce(m.size, 0), experiences: COUNT { (:Experience)-[:EXHIBITS]->(m) }} AS row
  ORDER BY m.id
} AS rows;
