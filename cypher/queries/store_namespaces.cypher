// LangGraph store, ListNamespacesOp: the distinct namespaces of the items of namespace $kb not
// expired at $now (the match conditions, depth and paging apply in kbgraph).
MATCH (i:StoreItem {kb: $kb})
WHERE i.expires_at IS NULL OR i.expires_at > $now
RETURN DISTINCT i.namespace AS namespace;
