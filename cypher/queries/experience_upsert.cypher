// Writes a batch of experiences with their domains. Content fields are set every time (they are
// what the id hashes, so they are equal); the learning state (quality, counters, status,
// timestamps) is set only when the node is created: afterwards feedback owns it. Provenance
// (source_ids) accumulates.
// $kb: namespace; $rows: [{id, content: {...}, learning: {...}, source_ids, domain,
//   pg_embedding, structure_embedding, context_embedding}]
UNWIND $rows AS row
MERGE (e:Experience {kb: $kb, id: row.id})
ON CREATE SET e += row.learning, e.source_ids = row.source_ids
ON MATCH SET e.source_ids = e.source_ids + [s IN row.source_ids WHERE NOT s IN e.source_ids]
SET e += row.content
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
