// LangGraph store, PutOp with a value: each item of $items ({id, path, key, namespace, value
// (JSON text), ttl (minutes or null), vectors: [{id, field, embedding}]}) is written in namespace $kb at $now.
// An item that exists keeps its created_at (unless it had expired); its vectors are replaced by
// the new ones (none when the put is not indexed).
UNWIND $items AS item
MERGE (i:StoreItem {kb: $kb, id: item.id})
ON CREATE SET i.created_at = $now
SET i.created_at = CASE WHEN i.expires_at IS NOT NULL AND i.expires_at <= $now THEN $now ELSE i.created_at END,
  i.path = item.path, i.key = item.key, i.namespace = item.namespace, i.value = item.value, i.updated_at = $now, i.ttl_minutes = item.ttl,
  i.expires_at = CASE WHEN item.ttl IS NULL THEN null
    ELSE $now + duration({milliseconds: toInteger(round(item.ttl * 60000.0))}) END
WITH i, item
CALL (i) {
  OPTIONAL MATCH (i)-[:HAS_VECTOR]->(old:StoreVector)
  DETACH DELETE old
}
CALL (i, item) {
  UNWIND item.vectors AS vector
  CREATE (i)-[:HAS_VECTOR]->(:StoreVector {kb: $kb, id: vector.id, field: vector.field, embedding: vector.embedding})
}
RETURN count(i) AS written;
