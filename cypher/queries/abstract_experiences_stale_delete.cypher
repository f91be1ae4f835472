// Deletes generated abstract experiences whose group no longer exists. $kb; $keep: ids to keep;
// $source: the marker generated abstractions carry in `source`.
MATCH (e:Experience {kb: $kb, kind: 'abstract', source: $source})
WHERE NOT e.id IN $keep
CALL (e) {
  OPTIONAL MATCH (e)-[:HAS_STEP|HAS_FAILURE]->(x)
  DETACH DELETE x
}
DETACH DELETE e
RETURN count(*) AS deleted;
