// Teacher phase, criticism channel: which stored failure modes (what went wrong, and how it was
// recovered) are nearest to one problematic step's failure, with the experience each belongs to?
// Neo4j 5.26 cannot filter inside a vector index, so the index is asked for the $first nearest
// failure modes of the whole database and the filters run afterwards: `fetched` is how many the
// index returned, `rows` the survivors, nearest first (score is Neo4j's cosine score (1 + cos) / 2).
// $kb: namespace; $vector: the embedding of the problematic step's issue and error; $first: how
// many nearest failure modes to ask the index for; $domains: lower-cased domain names to keep, or
// null for every domain; $agent: the calling agent: private experiences are returned only to
// their owner (none when null); $exclude_runs: runs whose failure modes are left out (a
// leave-one-run-out evaluation's own run). Only active experiences are returned.
CALL db.index.vector.queryNodes('failure_mode_embedding', $first, $vector) YIELD node, score
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
