// Student search, exact fallback of a vector channel: every experience of namespace $kb that
// passes the filters (as in search_experience_vectors), scored by cosine against $vector on the
// property $property (pg_embedding or structure_embedding, chosen by kbgraph from a fixed list).
// Used when other namespaces crowd the index so much that over-fetching hit its limit.
MATCH (node:Experience {kb: $kb})
WHERE node.status IN $statuses
  AND ($domains IS NULL OR node.domain IN $domains)
  AND ($kinds IS NULL OR node.kind IN $kinds)
  AND coalesce(node.success_rate, 0.0) >= $min_success
  AND coalesce(node.quality, 0.0) >= $min_quality
  AND (coalesce(node.scope, 'shared') = 'shared' OR node.owner_agent = $agent)
  AND node[$property] IS NOT NULL
WITH node, vector.similarity.cosine(node[$property], $vector) AS score
RETURN node.id AS id, score
ORDER BY score DESC, id
LIMIT $k;
