// Step texts of a namespace: how many of its step vectors are copies of one text?
//
// Every step keeps a vector of its own (the step index step_embedding holds one per step), though
// steps whose text is the same embed to the same vector: "find_user_id_by_name_zip: …" starts
// most retail runs. Per namespace: the steps, those with a vector, the distinct step texts
// (`action: text`, what kbgraph embeds), the distinct vectors of each text added up (one a text
// when every copy embeds alike), and the texts copied most, with their copies and distinct vectors.
// steps / distinct_texts is what one vector per distinct step text would take out of the index.
//
// @param kb "default" — the namespace (kbgraph cypher run fills it from --namespace / settings)
// @param limit 10 — how many of the most copied texts to list
//
// In cypher-shell or Neo4j Browser set the parameters first (kbgraph demo's namespace is "demo"):
// :param kb => "default"
// :param limit => 10
MATCH (s:Step {kb: $kb})
WITH s.action + ': ' + coalesce(s.text, '') AS text, count(s) AS copies, count(s.embedding) AS with_vector,
  count(DISTINCT s.embedding) AS vectors
ORDER BY copies DESC, text
WITH sum(copies) AS steps, sum(with_vector) AS with_vector, count(text) AS distinct_texts,
  sum(vectors) AS distinct_vectors, collect({text: text, copies: copies, vectors: vectors}) AS texts
WHERE steps > 0
RETURN steps, with_vector, distinct_texts, distinct_vectors, texts[..$limit] AS most_copied;
