// LangGraph store, SearchOp: every item of namespace $kb under namespace prefix $prefix (an
// encoded path: a string prefix), not expired at $now, newest first, with the best Neo4j cosine
// score ((1 + cos) / 2) of its vectors against $vector (null without a query vector, or for an
// item that has no vectors). $skip / $limit page it when nothing is filtered after the query
// (null $limit: all of them).
MATCH (i:StoreItem {kb: $kb})
WHERE i.path STARTS WITH $prefix AND (i.expires_at IS NULL OR i.expires_at > $now)
WITH i ORDER BY i.updated_at DESC, i.path, i.key
SKIP $skip
LIMIT coalesce($limit, 1000000000)
CALL (i) {
  OPTIONAL MATCH (i)-[:HAS_VECTOR]->(v:StoreVector)
  RETURN CASE WHEN $vector IS NULL THEN null ELSE max(vector.similarity.cosine(v.embedding, $vector)) END AS score
}
RETURN i.id AS id, i.key AS key, i.namespace AS namespace, i.value AS value,
  i.created_at AS created_at, i.updated_at AS updated_at, i.ttl_minutes AS ttl, score;
