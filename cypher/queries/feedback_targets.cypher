// Feedback: which of the experience ids $ids exist in namespace $kb, with their domain and the
// orders of their steps (to check step rewards before anything is written).
UNWIND $ids AS id
OPTIONAL MATCH (e:Experience {kb: $kb, id: id})
RETURN id, e IS NOT NULL AS found, e.domain AS domain, e.status AS status,
  CASE WHEN e IS NULL THEN [] ELSE COLLECT { MATCH (e)-[:HAS_STEP]->(s:Step) RETURN s.order } END AS step_orders;
