// Student search, step channel by exact scan (a namespace small enough, see
// search_namespace_size): every step text of namespace $kb (StepText, one vector per distinct
// `action: text`) is scored by cosine against the executed step $vector (the same normalised
// score as the step_text_embedding index), once, and each step takes its text's score; the up to
// $k experiences that pass the filters (as in search_step_vectors) are returned with their best
// step's score, best first. Exact, and independent of what other namespaces hold.
MATCH (text:StepText {kb: $kb})
WHERE text.embedding IS NOT NULL
WITH text, vector.similarity.cosine(text.embedding, $vector) AS score
MATCH (text)<-[:SAYS]-(:Step)<-[:HAS_STEP]-(e:Experience {kb: $kb})
WHERE e.status IN $statuses
  AND ($domains IS NULL OR e.domain IN $domains)
  AND ($kinds IS NULL OR e.kind IN $kinds)
  AND coalesce(e.success_rate, 0.0) >= $min_success
  AND coalesce(e.quality, 0.0) >= $min_quality
  AND (coalesce(e.scope, 'shared') = 'shared' OR e.owner_agent = $agent)
WITH e.id AS id, max(score) AS score
ORDER BY score DESC, id
LIMIT $k
RETURN collect({id: id, score: score}) AS rows;
