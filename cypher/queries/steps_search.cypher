// MAEL step-wise retrieval: stored steps near $vector (the step text index step_text_embedding, one
// vector per distinct step text, over-fetched to $fetch texts, expanded to the steps that SAY
// them, then filtered on the owning experience: namespace $kb, active, $domains (null = all),
// shared or owned by $agent) with their reward. Returns how many steps the index gave and up to $k
// candidates, nearest first, each with the Neo4j cosine score ((1 + cos) / 2).
// The steps are ranked before their experiences are read, then read in that order until $k pass
// the filters (the seek named): see steps_scan.
CALL db.index.vector.queryNodes('step_text_embedding', $fetch, $vector) YIELD node, score
WITH collect([node, score]) AS hits
WITH size(hits) AS fetched, [h IN hits WHERE h[0].kb = $kb] AS ours
CALL (ours) {
  UNWIND ours AS h
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
RETURN fetched, rows;
