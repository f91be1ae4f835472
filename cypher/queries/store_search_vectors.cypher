// LangGraph store, SearchOp with a query over many items: the $fetch vectors nearest to $vector
// in the store's vector index (shared by every namespace, hence the filters here), kept when
// their item is in namespace $kb under prefix $prefix and not expired at $now; one row per item
// with the best cosine of its vectors, computed from the stored vectors (the index's own scores
// come from its quantised copy and differ in the third decimal), as Neo4j's (1 + cos) / 2.
// `fetched` = how many vectors the index gave (fewer than $fetch: it has no more).
CALL db.index.vector.queryNodes('store_vector_embedding', $fetch, $vector) YIELD node, score
WITH collect([node, score]) AS hits
CALL (hits) {
  UNWIND hits AS hit
  WITH hit[0] AS v
  MATCH (i:StoreItem)-[:HAS_VECTOR]->(v)
  WHERE i.kb = $kb AND i.path STARTS WITH $prefix AND (i.expires_at IS NULL OR i.expires_at > $now)
  WITH DISTINCT i
  CALL (i) {
    MATCH (i)-[:HAS_VECTOR]->(w:StoreVector)
    RETURN max(vector.similarity.cosine(w.embedding, $vector)) AS score
  }
  WITH i, score
  ORDER BY score DESC, i.updated_at DESC, i.path, i.key
  RETURN collect({id: i.id, key: i.key, namespace: i.namespace, value: i.value,
    created_at: i.created_at, updated_at: i.updated_at, ttl: i.ttl_minutes, score: score}) AS rows
}
RETURN size(hits) AS fetched, rows;
