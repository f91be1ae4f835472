// Feedback: where each experience id of $ids lands in namespace $kb — itself, or, when it was merged
// away, the experience it was merged into (whose `merged_ids` keeps it) — with that experience's
// domain, status and step orders (to check step rewards before anything is written).
UNWIND $ids AS id
OPTIONAL MATCH (found:Experience {kb: $kb, id: id})
OPTIONAL CALL (found, id) {
  WITH id WHERE found IS NULL
  MATCH (survivor:Experience {kb: $kb})
  WHERE id IN survivor.merged_ids
  RETURN survivor ORDER BY survivor.id LIMIT 1
}
WITH id, coalesce(found, survivor) AS e
RETURN id, e IS NOT NULL AS found, e.id AS target, e.domain AS domain, e.status AS status,
  CASE WHEN e IS NULL THEN [] ELSE COLLECT { MATCH (e)-[:HAS_STEP]->(s:Step) RETURN s.order } END AS step_orders;
