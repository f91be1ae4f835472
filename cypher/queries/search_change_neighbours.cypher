// The change feed (kbgraph.store.change_feed): the experiences joined by an ABSTRACTION edge to
// experiences $ids of namespace $kb, read before a write that changes the status, existence or
// edges of those (their neighbours' rows change with them).
UNWIND $ids AS id
MATCH (:Experience {kb: $kb, id: id})-[:ABSTRACTION]-(n:Experience)
RETURN DISTINCT n.id AS id;
