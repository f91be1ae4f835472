// Student search, lexical channel: Lucene (BM25) hits of the full-text index experience_text
// (problem, goal, domain) for the query string $text, built by kbgraph from the query's words
// (escaped, OR-ed). Over-fetched like the vector channels ($fetch), then filtered: $kb,
// $statuses, $domains, $kinds, $min_success, $min_quality, scope / $agent. Returns how many hits
// the index gave and the first $k that pass, best first, with the raw Lucene score.
CALL db.index.fulltext.queryNodes('experience_text', $text, {limit: $fetch}) YIELD node, score
WITH collect([node, score]) AS hits
WITH size(hits) AS fetched,
  [h IN hits WHERE h[0].kb = $kb AND h[0].status IN $statuses
     AND ($domains IS NULL OR h[0].domain IN $domains)
     AND ($kinds IS NULL OR h[0].kind IN $kinds)
     AND coalesce(h[0].success_rate, 0.0) >= $min_success
     AND coalesce(h[0].quality, 0.0) >= $min_quality
     AND (coalesce(h[0].scope, 'shared') = 'shared' OR h[0].owner_agent = $agent)
   | {id: h[0].id, score: h[1], same: $domain IS NULL OR h[0].domain = $domain,
      rank: h[1] * CASE WHEN $domain IS NULL OR h[0].domain = $domain THEN 1.0 ELSE $other_domain END}] AS passing
CALL (passing) {
  UNWIND passing AS p
  WITH p ORDER BY p.rank DESC, p.id LIMIT $k
  RETURN collect(p {.id, .score}) AS rows
}
RETURN fetched, size(passing) AS passed, size([p IN passing WHERE p.same]) AS passed_same, rows;
