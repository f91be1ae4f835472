// Export: a page of the StoreVector nodes (LangGraph store vectors) of namespace $kb in id order,
// with their element ids (read in the same transaction by export_node_values and
// export_relationship_values).
// $kb; $after: the last id of the previous page ('' for the first); $limit: page size
MATCH (n:StoreVector {kb: $kb})
WHERE n.id > $after
RETURN n.id AS key, elementId(n) AS element_id
ORDER BY key
LIMIT $limit;
