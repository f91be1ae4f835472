// Migration to one vector per step text (kbgraph.store.step_texts): up to $limit steps of
// namespace $kb that still hold a vector of their own, with what their text's key is made of
// (`action: text`). Each converted page loses its vectors, so the next call reads the next page.
// $kb; $limit
MATCH (s:Step {kb: $kb})
WHERE s.embedding IS NOT NULL
RETURN s.id AS id, s.action AS action, s.text AS text
LIMIT $limit;
