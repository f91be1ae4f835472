// What an ingest report shows of namespace $kb's concepts: its concepts, insights and
// meta-concepts, and the relations stages 4–5 write (EXHIBITS, INSTANCE_OF), counted through the
// kb indexes and each meta-concept's degree: it costs what the concepts are, not the experiences.
CALL () { MATCH (n:Concept {kb: $kb}) RETURN count(n) AS concepts }
CALL () { MATCH (n:Insight {kb: $kb}) RETURN count(n) AS insights }
CALL () {
  MATCH (m:MetaConcept {kb: $kb})
  RETURN count(m) AS meta_concepts, sum(COUNT { (m)<-[:EXHIBITS]-() }) AS exhibits,
         sum(COUNT { (m)<-[:INSTANCE_OF]-() }) AS instance_of
}
RETURN concepts, insights, meta_concepts, exhibits, instance_of;
