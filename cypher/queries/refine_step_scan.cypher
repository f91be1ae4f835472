// Teacher phase, exact scan of namespace $kb for a namespace small enough (see
// search_namespace_size): every step text (StepText) of $kb is scored by cosine against $vector
// (the same normalised score as the index) and the $first nearest go on exactly as in
// refine_step_vectors.cypher, whose filters and rows follow. Exact, and independent of what
// other namespaces hold.
MATCH (node:StepText {kb: $kb})
WHERE node.embedding IS NOT NULL
WITH node, vector.similarity.cosine(node.embedding, $vector) AS score
ORDER BY score DESC
LIMIT $first
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
