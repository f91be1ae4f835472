// LangGraph store, TTL sweep: deletes the items of namespace $kb that expired at or before $now,
// with their vectors; returns how many items.
MATCH (i:StoreItem {kb: $kb})
WHERE i.expires_at <= $now
OPTIONAL MATCH (i)-[:HAS_VECTOR]->(v:StoreVector)
DETACH DELETE v, i
RETURN count(DISTINCT i) AS swept;
