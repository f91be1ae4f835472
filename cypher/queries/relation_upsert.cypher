// Writes experience relations. The relationship type is chosen from the four allowed ones here,
// never spliced in from input. $kb; $rows: [{source_id, target_id, type, weight, reason, inferred}]
// inferred = true marks edges kbgraph's linker made (recomputed on every ingest); false = declared.
UNWIND $rows AS row
MATCH (a:Experience {kb: $kb, id: row.source_id})
MATCH (b:Experience {kb: $kb, id: row.target_id})
FOREACH (_ IN CASE WHEN row.type = 'ABSTRACTION' THEN [1] ELSE [] END |
  MERGE (a)-[r:ABSTRACTION]->(b) SET r.weight = row.weight, r.reason = row.reason, r.inferred = row.inferred)
FOREACH (_ IN CASE WHEN row.type = 'COMPOSITION' THEN [1] ELSE [] END |
  MERGE (a)-[r:COMPOSITION]->(b) SET r.weight = row.weight, r.reason = row.reason, r.inferred = row.inferred)
FOREACH (_ IN CASE WHEN row.type = 'ADAPTATION' THEN [1] ELSE [] END |
  MERGE (a)-[r:ADAPTATION]->(b) SET r.weight = row.weight, r.reason = row.reason, r.inferred = row.inferred)
FOREACH (_ IN CASE WHEN row.type = 'ALTERNATIVE' THEN [1] ELSE [] END |
  MERGE (a)-[r:ALTERNATIVE]->(b) SET r.weight = row.weight, r.reason = row.reason, r.inferred = row.inferred)
RETURN count(*) AS written;
