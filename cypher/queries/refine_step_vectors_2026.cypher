// Teacher phase, step channel, on Neo4j 2026: as refine_step_vectors (same parameters and rows),
// but the step text index keeps namespace $kb itself (declared in it), so its $first nearest texts
// are all this namespace's, as refine_step_scan's are; the filters on the owning experience apply
// here: active, $domains (lower-cased, null = all), scope / $agent, $exclude_runs.
CYPHER 25
MATCH (node:StepText)
  SEARCH node IN (VECTOR INDEX step_text_embedding FOR $vector WHERE node.kb = $kb LIMIT $first) SCORE AS score
WITH collect({text: node, score: score}) AS hits
CALL (hits) {
  UNWIND hits AS hit
  WITH hit.text AS text, hit.score AS score
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
