// Clears the `unlinked` marks of experiences a consolidation of namespace $kb has merged and
// linked; a mark whose stamp changed since it was read (written again meanwhile) stays.
// $rows: [{id, stamp}] (stamp null: whatever the mark is).
// Each row is found by its key (the experience_key constraint's index), never through the
// experience_kb_unlinked index: in the transaction of an add, Neo4j 5.26's seek on that index still
// returns an experience whose mark the add wrote again before its merge deleted it, and reading it
// fails (EntityNotFound: "Node with id N has been deleted in this transaction").
UNWIND $rows AS row
MATCH (e:Experience {kb: $kb, id: row.id})
USING INDEX e:Experience(kb, id)
WHERE e.unlinked IS NOT NULL AND (row.stamp IS NULL OR e.unlinked = row.stamp)
REMOVE e.unlinked
RETURN count(e) AS cleared;
