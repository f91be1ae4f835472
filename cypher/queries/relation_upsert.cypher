// Writes experience relations. The relationship type is chosen from the four allowed ones here,
// never spliced in from input. $kb; $rows: [{source_id, target_id, type, weight, reason, inferred}]
// inferred = true marks edges kbgraph's linker made (recomputed on every ingest); false = declared
// by a user. A declared edge is never overwritten by an inferred one; a declared row wins.
UNWIND $rows AS row
MATCH (a:Experience {kb: $kb, id: row.source_id})
MATCH (b:Experience {kb: $kb, id: row.target_id})
FOREACH (_ IN CASE WHEN row.type = 'ABSTRACTION' THEN [1] ELSE [] END |
  MERGE (a)-[r:ABSTRACTION]->(b) SET r += CASE WHEN r.inferred = false AND row.inferred THEN {}
    ELSE {weight: row.weight, reason: row.reason, inferred: row.inferred} END)
FOREACH (_ IN CASE WHEN row.type = 'COMPOSITION' THEN [1] ELSE [] END |
  MERGE (a)-[r:COMPOSITION]->(b) SET r += CASE WHEN r.inferred = false AND row.inferred THEN {}
    ELSE {weight: row.weight, reason: row.reason, inferred: row.inferred} END)
FOREACH (_ IN CASE WHEN row.type = 'ADAPTATION' THEN [1] ELSE [] END |
  MERGE (a)-[r:ADAPTATION]->(b) SET r += CASE WHEN r.inferred = false AND row.inferred THEN {}
    ELSE {weight: row.weight, reason: row.reason, inferred: row.inferred} END)
FOREACH (_ IN CASE WHEN row.type = 'ALTERNATIVE' THEN [1] ELSE [] END |
  MERGE (a)-[r:ALTERNATIVE]->(b) SET r += CASE WHEN r.inferred = false AND row.inferred THEN {}
    ELSE {weight: row.weight, reason: row.reason, inferred: row.inferred} END)
RETURN count(*) AS written;
