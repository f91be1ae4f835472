// Migration to one vector per step text (kbgraph.store.step_texts): whether any step of the
// database, in any namespace, still holds a vector of its own (the old index step_embedding is
// dropped once none does).
OPTIONAL MATCH (s:Step)
WHERE s.embedding IS NOT NULL
WITH s LIMIT 1
RETURN s IS NOT NULL AS any;
