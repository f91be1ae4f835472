// Writes a batch of experiences with their domains. Content fields are set every time (they are
// what the id hashes, so they are equal); the learning state (quality, counters, status,
// timestamps) is set only when the node is created: afterwards feedback owns it. Provenance
// (source_ids) accumulates with the outcome of each run (failed_source_ids: the sources whose run
// failed), and the success rate is the average over all sources. A run that failed never shares a
// node with one that succeeded (the content hash tells them apart), so only ready-made experiences
// mix outcomes. A new experience, or one that gains sources, is marked `unlinked` (a fresh stamp):
// the next consolidation merges and links the marked ones only (kbgraph.ingest.link_state).
// $kb: namespace; $rows: [{id, content: {...}, learning: {...}, success_rate, source_ids,
//   failed_source_ids, domain, pg_embedding, structure_embedding, context_embedding,
//   pg_embedding_bytes, structure_embedding_bytes}]
UNWIND $rows AS row
MERGE (e:Experience {kb: $kb, id: row.id})
ON CREATE SET e += row.learning, e.source_ids = [], e.failed_source_ids = [], e.success_rate = row.success_rate,
  e.unlinked = randomUUID()
SET e += row.content
WITH e, row, [s IN row.source_ids WHERE NOT s IN e.source_ids] AS fresh, size(e.source_ids) AS known
SET e.success_rate = CASE WHEN known = 0 OR size(fresh) = 0 THEN e.success_rate
      ELSE (e.success_rate * known + row.success_rate * size(fresh)) / (known + size(fresh)) END,
    e.source_ids = e.source_ids + fresh,
    e.unlinked = CASE WHEN size(fresh) > 0 THEN randomUUID() ELSE e.unlinked END,
    e.failed_source_ids = coalesce(e.failed_source_ids, []) + [s IN coalesce(row.failed_source_ids, []) WHERE s IN fresh]
MERGE (d:Domain {kb: $kb, name: row.domain})
MERGE (e)-[:IN_DOMAIN]->(d)
// Embeddings follow from the content, so an existing experience keeps the ones it has;
// setNodeVectorProperty stores them as float32, half the size of a Cypher list of floats. The
// problem+goal and shape vectors are also kept as those float32 values' bytes, which bulk reads
// take (kbgraph.store.vector_cache.VECTOR_BYTES).
WITH e, row
WHERE e.pg_embedding IS NULL
CALL db.create.setNodeVectorProperty(e, 'pg_embedding', row.pg_embedding)
CALL db.create.setNodeVectorProperty(e, 'structure_embedding', row.structure_embedding)
CALL db.create.setNodeVectorProperty(e, 'context_embedding', row.context_embedding)
SET e.pg_embedding_bytes = row.pg_embedding_bytes, e.structure_embedding_bytes = row.structure_embedding_bytes
RETURN count(e) AS embedded;
