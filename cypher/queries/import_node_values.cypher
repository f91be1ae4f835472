// Import: the properties of nodes an import_merge_* query has just created (same transaction),
// found by element id within namespace $kb. Plain values are set as they are; temporal values
// are parsed from their text by the function of their type (a list type ends in []); vectors go
// through db.create.setNodeVectorProperty, stored as float32 like kbgraph's own writes, so the
// vector indexes pick them up.
// $kb; $rows: [{element_id, properties: {name: value}, temporal: [{key, type, value}],
//   vectors: [{key, value}]}]
UNWIND $rows AS row
MATCH (n)
WHERE elementId(n) = row.element_id AND n.kb = $kb
SET n += row.properties
FOREACH (t IN row.temporal | SET n[t.key] = CASE t.type
  WHEN 'datetime' THEN datetime(t.value)
  WHEN 'localdatetime' THEN localdatetime(t.value)
  WHEN 'date' THEN date(t.value)
  WHEN 'time' THEN time(t.value)
  WHEN 'localtime' THEN localtime(t.value)
  WHEN 'duration' THEN duration(t.value)
  WHEN 'datetime[]' THEN [v IN t.value | datetime(v)]
  WHEN 'localdatetime[]' THEN [v IN t.value | localdatetime(v)]
  WHEN 'date[]' THEN [v IN t.value | date(v)]
  WHEN 'time[]' THEN [v IN t.value | time(v)]
  WHEN 'localtime[]' THEN [v IN t.value | localtime(v)]
  WHEN 'duration[]' THEN [v IN t.value | duration(v)]
END)
WITH n, row
CALL (n, row) {
  UNWIND row.vectors AS vector
  CALL db.create.setNodeVectorProperty(n, vector.key, vector.value)
}
RETURN count(n) AS written;
