// Export: the properties of the nodes $ids (element ids from an export_page_* query run in the
// same transaction) of namespace $kb, each as {key, type, value} with type = valueType(value).
// Temporal values (and lists of them) come as the text toString writes, which datetime(),
// date(), duration() … read back exactly, nanoseconds and zone ids included; every other value
// comes as it is. kb is left out: the file's header names the namespace. $kb; $ids
UNWIND $ids AS id
MATCH (n)
WHERE elementId(n) = id AND n.kb = $kb
CALL (n) {
  UNWIND keys(n) AS k
  WITH k, valueType(n[k]) AS type
  WHERE k <> 'kb'
  RETURN collect({key: k, type: type, value: CASE
    WHEN type =~ 'LIST<((ZONED |LOCAL )?(DATETIME|TIME)|DATE|DURATION)( NOT NULL)?>.*' THEN [v IN n[k] | toString(v)]
    WHEN type =~ '((ZONED |LOCAL )?(DATETIME|TIME)|DATE|DURATION)( NOT NULL)?' THEN toString(n[k])
    ELSE n[k] END}) AS properties
}
RETURN id AS element_id, properties;
