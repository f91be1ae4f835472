// Export: a page of the StepText nodes (one vector per distinct step text) of namespace $kb in key
// order, with their element ids (read in the same transaction by export_node_values and
// export_relationship_values).
// $kb; $after: the last key of the previous page ('' for the first); $limit: page size
MATCH (n:StepText {kb: $kb})
WHERE n.key > $after
RETURN n.key AS key, elementId(n) AS element_id
ORDER BY key
LIMIT $limit;
