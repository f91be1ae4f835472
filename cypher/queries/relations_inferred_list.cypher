// The relations kbgraph inferred in namespace $kb, so the linker writes only what changed.
MATCH (a:Experience {kb: $kb})-[r:ABSTRACTION|COMPOSITION|ADAPTATION|ALTERNATIVE]->(b:Experience {kb: $kb})
WHERE r.inferred = true
RETURN type(r) AS type, a.id AS source_id, b.id AS target_id, r.weight AS weight, r.reason AS reason;
