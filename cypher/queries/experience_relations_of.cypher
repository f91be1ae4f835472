// The experience relations (any direction, declared or inferred) of the experiences $ids of
// namespace $kb, by type: what a merge deleting them takes with it. Read in the merge's transaction.
UNWIND $ids AS id
MATCH (e:Experience {kb: $kb, id: id})-[r:ABSTRACTION|COMPOSITION|ADAPTATION|ALTERNATIVE]-()
WITH DISTINCT r
RETURN type(r) AS type, count(r) AS count;
