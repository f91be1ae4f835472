// Step texts of a namespace: how many steps share each vector?
//
// Steps whose text is the same share one vector: a (:StepText {key, embedding}) node that they
// SAY, key = sha256 of the text `action: text` (what kbgraph embeds); the step index
// step_text_embedding holds one vector per distinct text ("find_user_id_by_name_zip: …" starts
// most retail runs). Per namespace: the steps, those still holding a vector of their own (written
// before; converted when the namespace is next opened), the distinct step texts, the StepText
// nodes (the vectors), those without a vector or said by no step (both should be 0: the audit of
// the deletes), and the texts said most, with how many steps say them.
//
// @param kb "default" — the namespace (kbgraph cypher run fills it from --namespace / settings)
// @param limit 10 — how many of the most said texts to list
//
// In cypher-shell or Neo4j Browser set the parameters first (kbgraph demo's namespace is "demo"):
// :param kb => "default"
// :param limit => 10
CALL () {
  MATCH (s:Step {kb: $kb})
  RETURN count(s) AS steps, count(s.embedding) AS with_own_vector,
    count(DISTINCT s.action + ': ' + coalesce(s.text, '')) AS distinct_texts
}
CALL () {
  OPTIONAL MATCH (v:StepText {kb: $kb})
  RETURN count(v) AS vectors, count(CASE WHEN v.embedding IS NULL THEN 1 END) AS without_vector,
    count(CASE WHEN NOT EXISTS { (v)<-[:SAYS]-() } THEN 1 END) AS orphans
}
CALL () {
  OPTIONAL MATCH (s:Step {kb: $kb})-[:SAYS]->(v:StepText {kb: $kb})
  WITH s.action + ': ' + coalesce(s.text, '') AS text, v.key AS key, count(s) AS saying
  WHERE key IS NOT NULL
  ORDER BY saying DESC, text
  RETURN collect({text: text, key: key, steps: saying})[..$limit] AS most_said
}
WITH steps, with_own_vector, distinct_texts, vectors, without_vector, orphans, most_said
WHERE steps > 0
RETURN steps, with_own_vector, distinct_texts, vectors, without_vector, orphans, most_said;
