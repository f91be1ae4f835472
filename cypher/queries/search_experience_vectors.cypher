// Student search, vector channels: the experiences nearest to $vector in one experience index
// ($index: experience_pg_embedding or experience_structure_embedding, chosen by kbgraph from a
// fixed list). A 5.26 vector index cannot filter, so it is asked for $fetch nodes and the filters
// apply here: namespace $kb, $statuses, $domains (null = all), $kinds (null = all), $min_success,
// $min_quality, and scope (shared, or private to $agent). Returns how many nodes the index gave
// (fewer than $fetch = it has no more) and the first $k that pass, best first, with Neo4j's
// cosine score (1 + cos) / 2.
CALL db.index.vector.queryNodes($index, $fetch, $vector) YIELD node, score
WITH collect([node, score]) AS hits
WITH size(hits) AS fetched,
  [h IN hits WHERE h[0].kb = $kb AND h[0].status IN $statuses
     AND ($domains IS NULL OR h[0].domain IN $domains)
     AND ($kinds IS NULL OR h[0].kind IN $kinds)
     AND coalesce(h[0].success_rate, 0.0) >= $min_success
     AND coalesce(h[0].quality, 0.0) >= $min_quality
     AND (coalesce(h[0].scope, 'shared') = 'shared' OR h[0].owner_agent = $agent)
   | {id: h[0].id, score: h[1], same: $domain IS NULL OR h[0].domain = $domain,
      rank: (2 * h[1] - 1) * CASE WHEN $domain IS NULL OR h[0].domain = $domain THEN 1.0 ELSE $other_domain END}] AS passing
CALL (passing) {
  UNWIND passing AS p
  WITH p ORDER BY p.rank DESC, p.id LIMIT $k
  RETURN collect(p {.id, .score}) AS rows
}
RETURN fetched, size(passing) AS passed, size([p IN passing WHERE p.same]) AS passed_same, rows;
