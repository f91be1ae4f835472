// Student search: the task vectors of the Outcome nodes $ids of namespace $kb
// (kbgraph.search.student.kept_feedback keeps them by id: an outcome's id is the hash of its task,
// so its vector does not change).
// The ids as one list under a hinted (kb, id) seek: with an UNWIND the planner could seek the
// namespace by kb and join the ids on (seen in CI in the reads the follows make).
MATCH (o:Outcome)
USING INDEX SEEK o:Outcome(kb, id)
WHERE o.kb = $kb AND o.id IN $ids
RETURN o.id AS id, o.embedding AS embedding;
