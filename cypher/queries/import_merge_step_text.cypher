// Import: MERGEs a batch of StepText nodes into namespace $kb on their key (the text's sha256), so
// importing twice, or into a namespace that already holds the same texts, creates no duplicates: a
// text the namespace holds keeps its vector (a text has one). A node that already exists is left
// as it is; import_node_values fills in the new ones (same transaction).
// $kb; $rows: [{line, key}] (line: the record's line in the file). Returns every row's node and
// whether this import created it.
UNWIND $rows AS row
MERGE (n:StepText {kb: $kb, key: row.key})
ON CREATE SET n._import_new = true
WITH row, n, n._import_new IS NOT NULL AS created
REMOVE n._import_new
RETURN row.line AS line, elementId(n) AS element_id, created;
