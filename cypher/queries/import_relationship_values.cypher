// Import: the properties of relationships an import_rel_* query has just created (same
// transaction), found by element id; both ends belong to namespace $kb. Plain values are set as
// they are, temporal values parsed from their text by the function of their type (see
// import_node_values). $kb; $rows: [{element_id, properties: {name: value}, temporal: [{key, type, value}]}]
UNWIND $rows AS row
MATCH (a)-[r]->(b)
WHERE elementId(r) = row.element_id AND a.kb = $kb AND b.kb = $kb
SET r += row.properties
FOREACH (t IN row.temporal | SET r[t.key] = CASE t.type
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
RETURN count(r) AS written;
