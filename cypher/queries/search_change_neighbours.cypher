// The change feed (kbgraph.store.change_feed): the experiences joined by an ABSTRACTION edge to
// experiences $ids of namespace $kb, read before a write that changes the status, existence or
// edges of those (their neighbours' rows change with them).
// The ids as one list under a hinted (kb, id) seek: with an UNWIND the planner could seek the
// namespace by kb and join the ids on (seen in CI in the reads the follows make).
MATCH (e:Experience)-[:ABSTRACTION]-(n:Experience)
USING INDEX SEEK e:Experience(kb, id)
WHERE e.kb = $kb AND e.id IN $ids
RETURN DISTINCT n.id AS id;
