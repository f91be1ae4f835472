// Student search, step channel and fine score, on Neo4j 2026: as search_step_vectors, but the
// step text index step_text_embedding keeps namespace $kb itself (declared in it), so its $fetch
// nearest texts are all this namespace's, expanded to the steps that SAY them; the filters on the owning experience apply here ($statuses,
// $domains, $kinds, $min_success, $min_quality, scope / $agent). Returns how many steps the index
// gave, the Neo4j cosine score of the last one (every step of the namespace it did not return
// scores at most that), and up to $k experiences, each with its best step's score, best first.
// The experiences are ranked by their steps' experience_id, then read in that order until $k pass
// the filters (the seek named), not read for every step: see search_step_scan.
CYPHER 25
MATCH (text:StepText)
  SEARCH text IN (VECTOR INDEX step_text_embedding FOR $vector WHERE text.kb = $kb LIMIT $fetch) SCORE AS score
WITH text, score ORDER BY score DESC
WITH collect([text, score]) AS hits
WITH size(hits) AS fetched, hits[-1][1] AS cutoff, hits AS ours
CALL (ours) {
  UNWIND ours AS h
  WITH h[0] AS text, h[1] AS score
  MATCH (text)<-[:SAYS]-(step)
  WITH step.experience_id AS id, max(score) AS score
  ORDER BY score DESC, id
  MATCH (e:Experience {kb: $kb, id: id})
  USING INDEX SEEK e:Experience(kb, id)
  WHERE e.status IN $statuses
    AND ($domains IS NULL OR e.domain IN $domains)
    AND ($kinds IS NULL OR e.kind IN $kinds)
    AND coalesce(e.success_rate, 0.0) >= $min_success
    AND coalesce(e.quality, 0.0) >= $min_quality
    AND (coalesce(e.scope, 'shared') = 'shared' OR e.owner_agent = $agent)
  WITH id, score
  LIMIT $k
  RETURN collect({id: id, score: score}) AS rows
}
RETURN fetched, cutoff, rows;
