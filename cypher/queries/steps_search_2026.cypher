// MAEL step-wise retrieval on Neo4j 2026: as steps_search, but the step text index
// step_text_embedding keeps namespace $kb itself (declared in it), so its $fetch nearest texts
// are all this namespace's (expanded to the steps that SAY them); the owning experience is filtered here (active, $domains (null = all), shared or
// owned by $agent). Returns how many steps the index gave and up to $k candidates, nearest first,
// each with the Neo4j cosine score ((1 + cos) / 2).
// The steps are ranked before their experiences are read, then read in that order until $k pass
// the filters (the seek named): see steps_scan.
CYPHER 25
MATCH (text:StepText)
  SEARCH text IN (VECTOR INDEX step_text_embedding FOR $vector WHERE text.kb = $kb LIMIT $fetch) SCORE AS score
WITH collect([text, score]) AS hits
CALL (hits) {
  UNWIND hits AS h
  WITH h[0] AS text, h[1] AS score
  MATCH (text)<-[:SAYS]-(step)
  WITH step, score
  ORDER BY score DESC, step.id
  MATCH (e:Experience {kb: $kb, id: step.experience_id})
  USING INDEX SEEK e:Experience(kb, id)
  WHERE e.status = 'active'
    AND ($domains IS NULL OR e.domain IN $domains)
    AND (coalesce(e.scope, 'shared') = 'shared' OR e.owner_agent = $agent)
  WITH step, score, e
  LIMIT $k
  RETURN collect({experience_id: e.id, problem: e.problem, domain: e.domain, scope: coalesce(e.scope, 'shared'),
                  owner_agent: e.owner_agent, order: step.order, action: step.action, text: step.text,
                  reward: step.reward, reward_count: step.reward_count, score: score}) AS rows
}
RETURN size(hits) AS fetched, rows;
