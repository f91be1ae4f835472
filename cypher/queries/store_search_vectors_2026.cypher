// LangGraph store, SearchOp with a query over many items, on Neo4j 2026: as store_search_vectors
// (same parameters and rows), but the store's vector index keeps namespace $kb itself (declared
// in it), so its $fetch nearest vectors are all this namespace's; the prefix $prefix and expiry
// at $now apply here. One row per item with the best cosine of its vectors, computed from the
// stored vectors, as Neo4j's (1 + cos) / 2. `fetched` = how many vectors the index gave.
CYPHER 25
MATCH (v:StoreVector)
  SEARCH v IN (VECTOR INDEX store_vector_embedding FOR $vector WHERE v.kb = $kb LIMIT $fetch)
WITH collect(v) AS hits
CALL (hits) {
  UNWIND hits AS v
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
