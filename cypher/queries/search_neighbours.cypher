// Student search, graph traversal: the experiences one hop from each seed in $seeds over the four
// experience relations (either direction), in namespace $kb, passing the filters ($statuses,
// $domains, $kinds, $min_success, $min_quality, scope / $agent). At most $per_seed per seed: the
// ones whose problem+goal is closest to the query ($pg), so a large abstraction yields the
// instances that matter. Returns the edge (type, direction, weight, reason) and the reached
// node's scoring facts.
UNWIND $seeds AS seed
MATCH (s:Experience {kb: $kb, id: seed})
CALL (s) {
  MATCH (s)-[r:ABSTRACTION|COMPOSITION|ADAPTATION|ALTERNATIVE]-(n:Experience {kb: $kb})
  WHERE n.status IN $statuses
    AND ($domains IS NULL OR n.domain IN $domains)
    AND ($kinds IS NULL OR n.kind IN $kinds)
    AND coalesce(n.success_rate, 0.0) >= $min_success
    AND coalesce(n.quality, 0.0) >= $min_quality
    AND (coalesce(n.scope, 'shared') = 'shared' OR n.owner_agent = $agent)
  WITH r, n, vector.similarity.cosine(n.pg_embedding, $pg) AS semantic
  ORDER BY semantic DESC, n.id
  LIMIT $per_seed
  RETURN r, n, semantic
}
RETURN seed, type(r) AS relation, startNode(r) = s AS outgoing, coalesce(r.weight, 1.0) AS weight,
  coalesce(r.reason, '') AS reason, n.id AS id, n.kind AS kind, n.domain AS domain,
  coalesce(n.success_rate, 1.0) AS success_rate, coalesce(n.quality, 0.5) AS quality, semantic,
  // support: the runs that succeeded (an abstract experience's: its instances'); runs: all of them
  CASE WHEN n.kind = 'abstract'
    THEN reduce(acc = 0, c IN COLLECT { MATCH (c:Experience {kb: $kb})-[:ABSTRACTION]->(n) RETURN c }
                | acc + size(coalesce(c.source_ids, [])) - size(coalesce(c.failed_source_ids, [])))
    ELSE size(coalesce(n.source_ids, [])) - size(coalesce(n.failed_source_ids, [])) END AS support,
  CASE WHEN n.kind = 'abstract'
    THEN reduce(acc = 0, c IN COLLECT { MATCH (c:Experience {kb: $kb})-[:ABSTRACTION]->(n) RETURN c }
                | acc + size(coalesce(c.source_ids, [])))
    ELSE size(coalesce(n.source_ids, [])) END AS runs,
  coalesce(n.scope, 'shared') AS scope,
  // utility (Agent KB D.3, unclipped), as in search_candidates_score, decaying at $decay per day
  coalesce(n.quality, 0.5)
    * exp(-$decay * duration.inSeconds(coalesce(n.last_used_at, n.created_at, datetime()), datetime()).seconds / 86400.0)
  + coalesce(n.usage_impact, 0.0)
    * exp(-$decay * duration.inSeconds(coalesce(n.usage_impact_at, datetime()), datetime()).seconds / 86400.0) AS utility;
