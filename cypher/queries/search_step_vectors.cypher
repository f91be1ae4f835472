// Student search, step channel and fine score: experiences owning a step near one executed step
// $vector (the step text index step_text_embedding, one vector per distinct step text, over-fetched
// to $fetch texts, then expanded to the steps that SAY them and filtered on the owning experience:
// $kb, $statuses, $domains, $kinds, $min_success, $min_quality, scope / $agent). Returns how many
// texts the index gave, the Neo4j cosine score of the last one (every step whose text the index
// did not return scores at most that), and up to $k experiences, each with its best step's score,
// best first.
// The experiences are ranked by their steps' experience_id, then read in that order until $k pass
// the filters (the seek named), not read for every step: see search_step_scan.
CALL db.index.vector.queryNodes('step_text_embedding', $fetch, $vector) YIELD node, score
WITH collect([node, score]) AS hits
WITH size(hits) AS fetched, hits[-1][1] AS cutoff, [h IN hits WHERE h[0].kb = $kb] AS ours
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
