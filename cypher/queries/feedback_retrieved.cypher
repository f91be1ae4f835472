// Feedback: counts one retrieval of each experience in $ids (namespace $kb). The first SET takes
// the node's write lock before the counter is read, so concurrent feedback never loses an update.
UNWIND $ids AS id
MATCH (e:Experience {kb: $kb, id: id})
SET e._lock = true
WITH e
SET e.retrieved = coalesce(e.retrieved, 0) + 1
REMOVE e._lock
RETURN e.id AS id;
