// Backfill of the vectors' bytes (kbgraph.store.vector_bytes_backfill): up to $limit experiences of
// namespace $kb stored with a problem+goal vector and without its bytes (written before those were
// kept), with their vectors. Each filled page gains its bytes, so the next call reads the next page.
// $kb; $limit
MATCH (e:Experience {kb: $kb})
WHERE e.pg_embedding IS NOT NULL AND e.pg_embedding_bytes IS NULL
RETURN e.id AS id, e.pg_embedding AS pg_embedding, e.structure_embedding AS structure_embedding
LIMIT $limit;
