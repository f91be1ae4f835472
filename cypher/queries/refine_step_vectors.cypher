// Teacher phase, step channel: which stored steps are nearest to one problematic step, with the
// experience each belongs to? Neo4j 5.26 cannot filter inside a vector index, so the step text
// index (one vector per distinct step text) is asked for the $first nearest texts of the whole
// database, they are expanded to the steps that SAY them and the filters run afterwards:
// `fetched` is how many texts the index returned, `rows` the survivors, nearest first
// (score is Neo4j's cosine score (1 + cos) / 2).
// $kb: namespace; $vector: the problematic step's embedding; $first: how many nearest texts to
// ask the index for; $domains: lower-cased domain names to keep, or null for every domain;
// $agent: the calling agent: private experiences are returned only to their owner (none when null);
// $exclude_runs: an experience standing only for these runs is left out. Only active experiences
// are returned.
CALL db.index.vector.queryNodes('step_text_embedding', $first, $vector) YIELD node, score
WITH collect({text: node, score: score}) AS hits
CALL (hits) {
  UNWIND hits AS hit
  WITH hit.text AS text, hit.score AS score
  WHERE text.kb = $kb
  MATCH (e:Experience {kb: $kb})-[:HAS_STEP]->(s:Step)-[:SAYS]->(text)
  WHERE e.status = 'active'
    AND ($domains IS NULL OR toLower(e.domain) IN $domains)
    AND (coalesce(e.scope, 'shared') = 'shared' OR e.owner_agent = $agent)
    AND (size($exclude_runs) = 0 OR size(coalesce(e.source_ids, [])) = 0
         OR any(run IN e.source_ids WHERE NOT run IN $exclude_runs))
  WITH e, s, score
  ORDER BY score DESC, e.id, s.order
  RETURN collect({
    experience_id: e.id, problem: e.problem, goal: e.goal, domain: e.domain,
    success_rate: e.success_rate, step_id: s.id, order: s.order, action: s.action, text: s.text,
    args_schema: s.args_schema, issue_type: s.issue_type,
    resolution_effectiveness: s.resolution_effectiveness, signature: s.signature, score: score
  }) AS rows
}
RETURN size(hits) AS fetched, rows;
