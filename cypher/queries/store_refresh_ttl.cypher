// LangGraph store, TTL refreshed on read: each item of namespace $kb of an id of $wanted
// that has a TTL and has not expired at $now expires its TTL after $now again.
UNWIND $wanted AS id
MATCH (i:StoreItem {kb: $kb, id: id})
WHERE i.ttl_minutes IS NOT NULL AND i.expires_at > $now
SET i.expires_at = $now + duration({milliseconds: toInteger(round(i.ttl_minutes * 60000.0))})
RETURN count(i) AS refreshed;
