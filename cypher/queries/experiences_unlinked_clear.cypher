// Clears the `unlinked` marks of experiences a consolidation of namespace $kb has merged and
// linked; a mark whose stamp changed since it was read (written again meanwhile) stays.
// $rows: [{id, stamp}] (stamp null: whatever the mark is).
UNWIND $rows AS row
MATCH (e:Experience {kb: $kb, id: row.id})
WHERE e.unlinked IS NOT NULL AND (row.stamp IS NULL OR e.unlinked = row.stamp)
REMOVE e.unlinked
RETURN count(e) AS cleared;
