// Skills export: the steps, in order, of the experiences $ids of namespace $kb that a skill shows
// (generalised text, argument schema, and what the tool returned, as stored: cut to 1,000 chars).
UNWIND $ids AS id
MATCH (e:Experience {kb: $kb, id: id})
CALL (e) {
  OPTIONAL MATCH (e)-[:HAS_STEP]->(s:Step)
  WITH s ORDER BY s.order
  RETURN collect(s {.order, .action, .text, .args_schema, .observation}) AS steps
}
RETURN e.id AS id, steps
ORDER BY id;
