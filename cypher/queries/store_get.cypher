// LangGraph store (kbgraph.integrations.langgraph), GetOp: the items of namespace $kb at each
// id of $wanted that have not expired at $now. An item's id is its path (its namespace encoded
// label by label, so that a namespace prefix is a string prefix) followed by its encoded key.
UNWIND $wanted AS id
MATCH (i:StoreItem {kb: $kb, id: id})
WHERE i.expires_at IS NULL OR i.expires_at > $now
RETURN i.id AS id, i.key AS key, i.namespace AS namespace, i.value AS value,
  i.created_at AS created_at, i.updated_at AS updated_at, i.ttl_minutes AS ttl;
