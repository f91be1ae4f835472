// Of the relations $rows ([{type, source_id, target_id}]) of namespace $kb, how many exist, by type
// (declared or inferred). Read before and after an incremental consolidation writes them, in the
// same transaction: the difference is what the writes changed in the namespace's totals.
UNWIND $rows AS row
MATCH (a:Experience {kb: $kb, id: row.source_id})-[r]->(b:Experience {kb: $kb, id: row.target_id})
WHERE type(r) = row.type
RETURN type(r) AS type, count(r) AS count;
