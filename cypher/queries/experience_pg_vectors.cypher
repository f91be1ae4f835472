// The problem+goal vectors of experiences $ids of namespace $kb: as their bytes
// (kbgraph.store.vector_cache.VECTOR_BYTES), or as the list of floats for one written before
// those were kept.
UNWIND $ids AS id
MATCH (e:Experience {kb: $kb, id: id})
RETURN e.id AS id, e.pg_embedding_bytes AS pg_embedding_bytes,
  CASE WHEN e.pg_embedding_bytes IS NULL THEN e.pg_embedding END AS pg_embedding;
