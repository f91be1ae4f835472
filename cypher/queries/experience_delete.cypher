// Deletes experiences by id with their steps and failure modes. $kb; $ids
UNWIND $ids AS id
MATCH (e:Experience {kb: $kb, id: id})
CALL (e) {
  OPTIONAL MATCH (e)-[:HAS_STEP|HAS_FAILURE]->(x)
  DETACH DELETE x
}
DETACH DELETE e
RETURN count(*) AS deleted;
