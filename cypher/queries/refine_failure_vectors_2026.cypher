// Teacher phase, criticism channel, on Neo4j 2026: as refine_failure_vectors (same parameters
// and rows), but the failure-mode index keeps namespace $kb itself (declared in it), so its $first
// nearest failure modes are all this namespace's; $exclude_runs and the filters on the owning
// experience apply here: active, $domains (lower-cased, null = all), scope / $agent.
CYPHER 25
MATCH (node:FailureMode)
  SEARCH node IN (VECTOR INDEX failure_mode_embedding FOR $vector WHERE node.kb = $kb LIMIT $first) SCORE AS score
WITH collect({failure: node, score: score}) AS hits
CALL (hits) {
  UNWIND hits AS hit
  WITH hit.failure AS f, hit.score AS score
  WHERE NOT coalesce(f.run_id, '') IN $exclude_runs
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
