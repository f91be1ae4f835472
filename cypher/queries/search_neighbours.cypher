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
// support: the runs that succeeded (an abstract experience's: its instances'); runs: all of them
CALL (n) {
  OPTIONAL MATCH (c:Experience {kb: $kb})-[:ABSTRACTION]->(n) WHERE n.kind = 'abstract'
  WITH n, collect(c) AS instances
  WITH CASE WHEN n.kind = 'abstract' THEN instances ELSE [n] END AS members
  RETURN reduce(acc = 0, m IN members | acc + size(coalesce(m.source_ids, []))) AS runs,
    reduce(acc = 0, m IN members | acc + size(coalesce(m.failed_source_ids, []))) AS failed
}
// utility as in search_candidates_score (Agent KB D.3, unclipped), decaying at $decay per calendar day
// up to $today (null: the server's current UTC date); a time not recorded counts as today (0 days)
WITH seed, s, r, n, semantic, runs, failed, coalesce($today, date({timezone: 'Z'})) AS today
WITH seed, s, r, n, semantic, runs, failed,
  duration.inDays(date(datetime({datetime: coalesce(n.last_used_at, n.created_at, datetime({date: today, timezone: 'Z'})), timezone: 'Z'})), today).days AS idle,
  duration.inDays(date(datetime({datetime: coalesce(n.usage_impact_at, datetime({date: today, timezone: 'Z'})), timezone: 'Z'})), today).days AS since_impact
// One row: `rows`, a map per (seed, edge, reached node).
RETURN collect({seed: seed, relation: type(r), outgoing: startNode(r) = s, weight: coalesce(r.weight, 1.0),
  reason: coalesce(r.reason, ''), id: n.id, kind: n.kind, domain: n.domain,
  success_rate: coalesce(n.success_rate, 1.0), quality: coalesce(n.quality, 0.5), semantic: semantic,
  support: runs - failed, runs: runs,
  scope: coalesce(n.scope, 'shared'),
  utility: coalesce(n.quality, 0.5) * exp(-$decay * CASE WHEN idle > 0 THEN idle ELSE 0.0 END)
    + coalesce(n.usage_impact, 0.0) * exp(-$decay * CASE WHEN since_impact > 0 THEN since_impact ELSE 0.0 END)}) AS rows;
