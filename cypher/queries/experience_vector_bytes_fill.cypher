// Backfill of the vectors' bytes (kbgraph.store.vector_bytes_backfill): each experience of $rows
// gets the bytes of the vectors it was read with, only if it still has no bytes and still holds
// those vectors (a workflow rewritten meanwhile keeps what its rewrite set).
// $kb; $rows: [{id, pg_embedding, structure_embedding, pg_embedding_bytes, structure_embedding_bytes}]
UNWIND $rows AS row
MATCH (e:Experience {kb: $kb, id: row.id})
WHERE e.pg_embedding_bytes IS NULL AND e.pg_embedding = row.pg_embedding
  AND (e.structure_embedding = row.structure_embedding
       OR (e.structure_embedding IS NULL AND row.structure_embedding IS NULL))
SET e.pg_embedding_bytes = row.pg_embedding_bytes, e.structure_embedding_bytes = row.structure_embedding_bytes
RETURN count(e) AS filled;
