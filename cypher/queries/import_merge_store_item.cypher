// Import: MERGEs a batch of StoreItem nodes into namespace $kb on their key (id), so importing
// twice, or into a namespace that already holds some of them, creates no duplicates. A node that
// already exists is left as it is; import_node_values fills in the new ones (same transaction).
// $kb; $rows: [{line, key}] (line: the record's line in the file). Returns every row's node and
// whether this import created it.
UNWIND $rows AS row
MERGE (n:StoreItem {kb: $kb, id: row.key})
ON CREATE SET n._import_new = true
WITH row, n, n._import_new IS NOT NULL AS created
REMOVE n._import_new
RETURN row.line AS line, elementId(n) AS element_id, created;
