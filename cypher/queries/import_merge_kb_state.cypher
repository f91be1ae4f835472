// Import: MERGEs the KbState node of namespace $kb (one per namespace, keyed by kb alone). One
// that already exists is left as it is; import_node_values fills in a new one (same transaction).
// $kb; $rows: [{line, key}] (key is null). Returns the row's node and whether it was created.
UNWIND $rows AS row
MERGE (n:KbState {kb: $kb})
ON CREATE SET n._import_new = true
WITH row, n, n._import_new IS NOT NULL AS created
REMOVE n._import_new
RETURN row.line AS line, elementId(n) AS element_id, created;
