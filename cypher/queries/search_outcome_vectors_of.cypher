// Student search: the task vectors of the Outcome nodes $ids of namespace $kb
// (kbgraph.search.student.kept_feedback keeps them by id: an outcome's id is the hash of its task,
// so its vector does not change).
UNWIND $ids AS id
MATCH (o:Outcome {kb: $kb, id: id})
RETURN o.id AS id, o.embedding AS embedding;
