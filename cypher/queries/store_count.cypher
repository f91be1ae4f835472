// LangGraph store: how many items of namespace $kb lie under namespace prefix $prefix (expired
// ones included: the choice between an exact scan and the vector index only needs the size).
MATCH (i:StoreItem {kb: $kb})
WHERE i.path STARTS WITH $prefix
RETURN count(i) AS items;
