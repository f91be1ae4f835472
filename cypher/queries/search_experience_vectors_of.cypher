// Student search, the in-process vector channels (kbgraph.search.student.vector_model): the
// problem+goal and workflow-shape vectors of experiences $ids of namespace $kb (one row each; an id
// no longer stored is left out).
UNWIND $ids AS id
MATCH (e:Experience {kb: $kb, id: id})
RETURN e.id AS id, e.pg_embedding AS pg, e.structure_embedding AS structure;
