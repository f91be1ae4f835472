// Pairwise cosine similarities (Neo4j scores, (1 + cos) / 2) of the problem+goal vectors of
// experiences $ids in namespace $kb: MMR's redundancy term over the final pool, computed in the
// database so no embedding travels.
UNWIND $ids AS a
MATCH (x:Experience {kb: $kb, id: a})
UNWIND $ids AS b
MATCH (y:Experience {kb: $kb, id: b})
RETURN a, b, vector.similarity.cosine(x.pg_embedding, y.pg_embedding) AS score;
