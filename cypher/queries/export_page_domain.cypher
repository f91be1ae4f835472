// Export: a page of the Domain nodes of namespace $kb in name order, with their element ids (read
// in the same transaction by export_node_values and export_relationship_values).
// $kb; $after: the last name of the previous page ('' for the first); $limit: page size
MATCH (n:Domain {kb: $kb})
WHERE n.name > $after
RETURN n.name AS key, elementId(n) AS element_id
ORDER BY key
LIMIT $limit;
