// Links consecutive steps. $kb; $rows: [{from_id, to_id}]
UNWIND $rows AS row
MATCH (a:Step {kb: $kb, id: row.from_id})
MATCH (b:Step {kb: $kb, id: row.to_id})
MERGE (a)-[:NEXT]->(b)
RETURN count(*) AS linked;
