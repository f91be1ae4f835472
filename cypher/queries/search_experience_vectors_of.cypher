// Student search, the in-process vector channels (kbgraph.search.student.vector_model): the
// problem+goal and workflow-shape vectors of experiences $ids of namespace $kb (one row each; an id
// no longer stored is left out), each as its bytes (kbgraph.store.vector_cache.VECTOR_BYTES) or,
// for one written before those were kept, as its list of floats.
// The ids as one list under a hinted (kb, id) seek: with an UNWIND the planner could seek the
// namespace by kb and join the ids on (seen in CI in the reads the follows make).
MATCH (e:Experience)
USING INDEX SEEK e:Experience(kb, id)
WHERE e.kb = $kb AND e.id IN $ids
RETURN e.id AS id, e.pg_embedding_bytes AS pg_bytes, e.structure_embedding_bytes AS structure_bytes,
  CASE WHEN e.pg_embedding_bytes IS NULL THEN e.pg_embedding END AS pg,
  CASE WHEN e.structure_embedding_bytes IS NULL THEN e.structure_embedding END AS structure;
