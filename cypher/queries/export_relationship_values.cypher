// Export: the outgoing relationships of the nodes $ids (element ids from an export_page_* query
// run in the same transaction) whose end node belongs to namespace $kb too: type, the end node's
// labels and, for each of them, its key in $key_of ({label: key property}; null for a label
// without one), and the properties encoded as export_node_values does. $kb; $ids; $key_of
UNWIND $ids AS id
MATCH (a)-[r]->(b)
WHERE elementId(a) = id AND b.kb = $kb
CALL (r) {
  UNWIND keys(r) AS k
  WITH k, valueType(r[k]) AS type
  RETURN collect({key: k, type: type, value: CASE
    WHEN type =~ 'LIST<((ZONED |LOCAL )?(DATETIME|TIME)|DATE|DURATION)( NOT NULL)?>.*' THEN [v IN r[k] | toString(v)]
    WHEN type =~ '((ZONED |LOCAL )?(DATETIME|TIME)|DATE|DURATION)( NOT NULL)?' THEN toString(r[k])
    ELSE r[k] END}) AS properties
}
RETURN id AS start_element_id, type(r) AS type, labels(b) AS end_labels,
  [label IN labels(b) | CASE WHEN $key_of[label] IS NULL THEN null ELSE b[$key_of[label]] END] AS end_keys,
  properties;
