// Writes a batch of experiences with their domains. Content fields are set every time (they are
// what the id hashes, so they are equal); the learning state (quality, counters, status,
// timestamps) is set only when the node is created: afterwards feedback owns it. Provenance
// (source_ids) accumulates, and the success rate is the average over all sources: the same
// workflow succeeding once and failing once is one experience with success rate 0.5.
// $kb: namespace; $rows: [{id, content: {...}, learning: {...}, success_rate, source_ids, domain,
//   pg_embedding, structure_embedding, context_embedding}]
UNWIND $rows AS row
MERGE (e:Experience {kb: $kb, id: row.id})
ON CREATE SET e += row.learning, e.source_ids = [], e.success_rate = row.success_rate
SET e += row.content
WITH e, row, [s IN row.source_ids WHERE NOT s IN e.source_ids] AS fresh, size(e.source_ids) AS known
SET e.success_rate = CASE WHEN known = 0 OR size(fresh) = 0 THEN e.success_rate
      ELSE (e.success_rate * known + row.success_rate * size(fresh)) / (known + size(fresh)) END,
    e.source_ids = e.source_ids + fresh
MERGE (d:Domain {kb: $kb, name: row.domain})
MERGE (e)-[:IN_DOMAIN]->(d)
// Embeddings follow from the content, so an existing experience keeps the ones it has;
// setNodeVectorProperty stores them as float32, half the size of a Cypher list of floats.
WITH e, row
WHERE e.pg_embedding IS NULL
CALL db.create.setNodeVectorProperty(e, 'pg_embedding', row.pg_embedding)
CALL db.create.setNodeVectorProperty(e, 'structure_embedding', row.structure_embedding)
CALL db.create.setNodeVectorProperty(e, 'context_embedding', row.context_embedding)
RETURN count(e) AS embedded;
