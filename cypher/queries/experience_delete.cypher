// Deletes experiences by id with their steps and failure modes, and the step vectors (StepText)
// no step says any more. $kb; $ids
// A vector is deleted only once this transaction holds its write lock (SET v._lock) and no step
// SAYS it: an add of the same text (step_upsert MERGEs the SAYS edge, which locks it) either
// committed first and keeps it alive, or waits and meets it deleted (and writes it again).
UNWIND $ids AS id
MATCH (e:Experience {kb: $kb, id: id})
CALL (e) {
  OPTIONAL MATCH (e)-[:HAS_STEP]->(:Step)-[:SAYS]->(v:StepText)
  RETURN collect(DISTINCT v) AS texts
}
CALL (e) {
  OPTIONAL MATCH (e)-[:HAS_STEP|HAS_FAILURE]->(x)
  DETACH DELETE x
}
DETACH DELETE e
WITH collect(texts) AS texts, count(*) AS deleted
CALL (texts) {
  UNWIND texts AS some
  UNWIND some AS v
  WITH DISTINCT v
  SET v._lock = true
  WITH v WHERE v.kb IS NOT NULL
  REMOVE v._lock
  WITH v WHERE COUNT { (v)<-[:SAYS]-() } = 0
  DELETE v
}
RETURN deleted;
