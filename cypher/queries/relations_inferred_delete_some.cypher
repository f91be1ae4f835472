// Drops the inferred relations $rows ([{type, source_id, target_id}]) of namespace $kb that the
// linker's new plan no longer has; declared relations (inferred = false) are never touched. The
// type is compared with the row's, never spliced into the query.
UNWIND $rows AS row
MATCH (a:Experience {kb: $kb, id: row.source_id})-[r:ABSTRACTION|COMPOSITION|ADAPTATION|ALTERNATIVE]->(b:Experience {kb: $kb, id: row.target_id})
WHERE type(r) = row.type AND r.inferred = true
DELETE r
RETURN count(*) AS deleted;
