// Student search, step channel by exact scan (a namespace small enough, see
// search_namespace_size): every step text of namespace $kb (StepText, one vector per distinct
// `action: text`) is scored by cosine against the executed step $vector (the same normalised
// score as the step_text_embedding index), once, and each step takes its text's score; the up to
// $k experiences that pass the filters (as in search_step_vectors) are returned with their best
// step's score, best first. Exact, and independent of what other namespaces hold.
// Texts are expanded to their steps best first: a first pass over the best texts said by at
// least 4·$k steps together (and every text scoring as the last of them). When it finds $k
// experiences, an experience it did not reach says only texts scoring lower, so they are the
// answer; otherwise a second pass expands every text (the first row that answers is returned).
// A pass ranks the experiences by their steps' experience_id before it reads any of them, then
// reads them in that order until $k pass the filters: at 100,000 experiences the best text alone
// is said by ~37,000 steps of ~15,000 experiences, and filtering each step's experience took
// 100–330 ms a step against 30–80 (the first searches with steps of a new process, before the
// kept step texts are read, kbgraph.search.student.step_model). SAYS comes only from a Step. The
// seek is named: planned on other statistics, the experiences were otherwise scanned by (kb,
// status) for each one ranked (the tests' database).
MATCH (text:StepText {kb: $kb})
WHERE text.embedding IS NOT NULL
WITH text, vector.similarity.cosine(text.embedding, $vector) AS score, COUNT { (text)<-[:SAYS]-() } AS saying
ORDER BY score DESC
WITH collect({text: text, score: score, saying: saying}) AS ranked
WITH ranked, reduce(cut = {steps: 0, n: 0}, r IN ranked |
  CASE WHEN cut.steps >= 4 * $k THEN cut ELSE {steps: cut.steps + r.saying, n: cut.n + 1} END) AS cut
WITH ranked, [r IN ranked WHERE cut.n > 0 AND r.score >= ranked[cut.n - 1].score] AS first
UNWIND CASE WHEN size(first) < size(ranked) THEN [first, ranked] ELSE [ranked] END AS texts
CALL (texts) {
  UNWIND texts AS r
  WITH r.text AS text, r.score AS score
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
WITH ranked, texts, rows
WHERE size(rows) >= $k OR size(texts) = size(ranked)
RETURN rows
LIMIT 1;
