// Student search, a vector channel by exact scan: every experience of namespace $kb that passes
// the filters (as in search_experience_vectors), scored by cosine against $vector on the property
// $property (pg_embedding or structure_embedding, chosen by kbgraph from a fixed list) and ranked
// as that query ranks (another domain than $domain discounted by $other_domain). Used for a
// namespace small enough to scan (search_namespace_size), and when other namespaces crowd the
// index so much that over-fetching hit its limit. Exact, and independent of other namespaces.
MATCH (node:Experience {kb: $kb})
WHERE node.status IN $statuses
  AND ($domains IS NULL OR node.domain IN $domains)
  AND ($kinds IS NULL OR node.kind IN $kinds)
  AND coalesce(node.success_rate, 0.0) >= $min_success
  AND coalesce(node.quality, 0.0) >= $min_quality
  AND (coalesce(node.scope, 'shared') = 'shared' OR node.owner_agent = $agent)
WITH node, vector.similarity.cosine(node[$property], $vector) AS score
// Read once: a separate `node[$property] IS NOT NULL` reads the whole vector a second time (a
// dynamic property is not cached as `node.pg_embedding` would be); 21 -> 15 ms for 934 nodes.
WHERE score IS NOT NULL
WITH node.id AS id, score,
  (2 * score - 1) * CASE WHEN $domain IS NULL OR node.domain = $domain THEN 1.0 ELSE $other_domain END AS rank
RETURN id, score
ORDER BY rank DESC, id
LIMIT $k;
