// The status of each experience of $ids that exists in namespace $kb, and whether it was archived
// because its workflow dissolved (a generated abstract experience that comes back when its
// workflow is shared again).
UNWIND $ids AS id
MATCH (e:Experience {kb: $kb, id: id})
RETURN e.id AS id, e.status AS status, coalesce(e.dissolved, false) AS dissolved
ORDER BY id;
