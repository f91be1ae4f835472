// What each stored experience of $ids in namespace $kb hashed to when it was written (null for
// experiences written before kbgraph recorded it).
UNWIND $ids AS id
MATCH (e:Experience {kb: $kb, id: id})
RETURN e.id AS id, e.content_id AS content_id;
