// Student search, step channel by exact scan (a namespace small enough, see
// search_namespace_size): every step of namespace $kb is scored by cosine against the executed
// step $vector (the same normalised score as the step_embedding index), and the up to $k
// experiences that pass the filters (as in search_step_vectors) are returned with their best
// step's score, best first. Exact, and independent of what other namespaces hold.
MATCH (e:Experience {kb: $kb})
WHERE e.status IN $statuses
  AND ($domains IS NULL OR e.domain IN $domains)
  AND ($kinds IS NULL OR e.kind IN $kinds)
  AND coalesce(e.success_rate, 0.0) >= $min_success
  AND coalesce(e.quality, 0.0) >= $min_quality
  AND (coalesce(e.scope, 'shared') = 'shared' OR e.owner_agent = $agent)
MATCH (e)-[:HAS_STEP]->(step:Step)
WHERE step.embedding IS NOT NULL
WITH e.id AS id, max(vector.similarity.cosine(step.embedding, $vector)) AS score
ORDER BY score DESC, id
LIMIT $k
RETURN collect({id: id, score: score}) AS rows;
