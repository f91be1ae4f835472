// Teacher phase, exact scan of namespace $kb for a namespace small enough (see
// search_namespace_size): every FailureMode node of $kb is scored by cosine against $vector
// (the same normalised score as the index) and the $first nearest go on exactly as in
// refine_failure_vectors.cypher, whose filters and rows follow. Exact, and independent of what
// other namespaces hold.
MATCH (node:FailureMode {kb: $kb})
WHERE node.embedding IS NOT NULL
WITH node, vector.similarity.cosine(node.embedding, $vector) AS score
ORDER BY score DESC
LIMIT $first
WITH collect({failure: node, score: score}) AS hits
CALL (hits) {
  UNWIND hits AS hit
  WITH hit.failure AS f, hit.score AS score
  WHERE f.kb = $kb AND NOT coalesce(f.run_id, '') IN $exclude_runs
  MATCH (e:Experience {kb: $kb})-[:HAS_FAILURE]->(f)
  WHERE e.status = 'active'
    AND ($domains IS NULL OR toLower(e.domain) IN $domains)
    AND (coalesce(e.scope, 'shared') = 'shared' OR e.owner_agent = $agent)
  WITH e, f, score
  ORDER BY score DESC, e.id, f.id
  RETURN collect({
    experience_id: e.id, problem: e.problem, goal: e.goal, domain: e.domain,
    success_rate: e.success_rate, failure_id: f.id, description: f.description,
    issue_type: f.issue_type, recovery: f.recovery, step_order: f.step_order, score: score,
    signature: f.signature, signature_action: f.signature_action, signature_error: f.signature_error,
    run_id: f.run_id
  }) AS rows
}
RETURN size(hits) AS fetched, rows;
