// Student search, vector channel over experience_structure_embedding on Neo4j 2026: the same rows as
// search_experience_vectors, but the index itself keeps namespace $kb and $statuses (declared in
// it: cypher/schema/03_vector_indexes_2026.cypher), so its $fetch nearest nodes are all this
// namespace's. The other filters apply here: $domains (null = all), $kinds (null = all),
// $min_success, $min_quality, and scope (shared, or private to $agent). Returns how many nodes
// the index gave (fewer than $fetch = it has no more) and the first $k that pass, best first
// (ranked with another domain than $domain discounted by $other_domain), with Neo4j's cosine
// score (1 + cos) / 2.
CYPHER 25
MATCH (node:Experience)
  SEARCH node IN (VECTOR INDEX experience_structure_embedding FOR $vector
                  WHERE node.kb = $kb AND node.status IN $statuses LIMIT $fetch) SCORE AS score
WITH node, score ORDER BY score DESC
WITH collect([node, score]) AS hits
WITH size(hits) AS fetched,
  [h IN hits WHERE ($domains IS NULL OR h[0].domain IN $domains)
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
