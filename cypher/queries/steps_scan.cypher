// steps_search by exact scan, for a namespace small enough (see search_namespace_size): every step
// of namespace $kb's active experiences ($domains: null = all; shared, or owned by $agent) scored
// by the cosine of its text's vector (StepText) against $vector (the same normalised score as the
// step_text_embedding index). Exact, and
// independent of what other namespaces hold: through the shared index, a large namespace with
// similar steps crowded a small one's out of the over-fetched candidates.
// Texts are expanded to their steps best first (as search_step_scan): a first pass over the best
// texts said by at least 4·$k steps together (and every text scoring as the last of them), whose
// steps are ranked before their experiences are read, then read in that order until $k pass the
// filters. When it finds $k steps, a step it did not reach says a text scoring lower, so they are
// the answer; otherwise a second pass expands every text. It ordered every step of the namespace
// (~800,000 at 100,000 experiences) where a pass orders those of the best texts.
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
  WITH step, score
  ORDER BY score DESC, step.id
  MATCH (e:Experience {kb: $kb, id: step.experience_id})
  USING INDEX SEEK e:Experience(kb, id)
  WHERE e.status = 'active'
    AND ($domains IS NULL OR e.domain IN $domains)
    AND (coalesce(e.scope, 'shared') = 'shared' OR e.owner_agent = $agent)
  WITH e, step, score
  LIMIT $k
  RETURN collect({experience_id: e.id, problem: e.problem, domain: e.domain, scope: coalesce(e.scope, 'shared'),
                  owner_agent: e.owner_agent, order: step.order, action: step.action, text: step.text,
                  reward: step.reward, reward_count: step.reward_count, score: score}) AS rows
}
WITH ranked, texts, rows
WHERE size(rows) >= $k OR size(texts) = size(ranked)
RETURN rows
LIMIT 1;
