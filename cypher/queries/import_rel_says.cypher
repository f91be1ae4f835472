// Import: MERGEs a batch of (:Step)-[:SAYS]->(:StepText) relationships of namespace $kb between
// nodes already imported; one that already exists is left as it is, and
// import_relationship_values fills in the new ones (same transaction).
// $kb; $rows: [{line, start, end}] (start: the Step's id, end: the StepText's key). Returns every
// row whose two nodes were found, and whether this import created the relationship.
UNWIND $rows AS row
MATCH (a:Step {kb: $kb, id: row.start})
MATCH (b:StepText {kb: $kb, key: row.end})
MERGE (a)-[r:SAYS]->(b)
ON CREATE SET r._import_new = true
WITH row, r, r._import_new IS NOT NULL AS created
REMOVE r._import_new
RETURN row.line AS line, elementId(r) AS element_id, created;
