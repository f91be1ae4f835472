// Export: a page of the StoreItem nodes (LangGraph store items) of namespace $kb in id order, with
// their element ids (read in the same transaction by export_node_values and
// export_relationship_values).
// $kb; $after: the last id of the previous page ('' for the first); $limit: page size
MATCH (n:StoreItem {kb: $kb})
WHERE n.id > $after
RETURN n.id AS key, elementId(n) AS element_id
ORDER BY key
LIMIT $limit;
