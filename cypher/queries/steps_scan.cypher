// steps_search by exact scan, for a namespace small enough (see search_namespace_size): every step
// of namespace $kb's active experiences ($domains: null = all; shared, or owned by $agent) scored
// by the cosine of its text's vector (StepText) against $vector (the same normalised score as the
// step_text_embedding index). Exact, and
// independent of what other namespaces hold: through the shared index, a large namespace with
// similar steps crowded a small one's out of the over-fetched candidates.
MATCH (e:Experience {kb: $kb})
WHERE e.status = 'active'
  AND ($domains IS NULL OR e.domain IN $domains)
  AND (coalesce(e.scope, 'shared') = 'shared' OR e.owner_agent = $agent)
MATCH (e)-[:HAS_STEP]->(step:Step)-[:SAYS]->(text:StepText)
WHERE text.embedding IS NOT NULL
WITH e, step, vector.similarity.cosine(text.embedding, $vector) AS score
ORDER BY score DESC, step.id
LIMIT $k
RETURN collect({experience_id: e.id, problem: e.problem, domain: e.domain, scope: coalesce(e.scope, 'shared'),
                owner_agent: e.owner_agent, order: step.order, action: step.action, text: step.text,
                reward: step.reward, reward_count: step.reward_count, score: score}) AS rows;
