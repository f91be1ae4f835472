// What an ingest report shows of namespace $kb: its concepts, insights and meta-concepts, and its
// relations of the types stages 4–7 write. Counted through the kb indexes and each node's degree
// by type (never by walking relationships), so it costs little next to kb.stats() in a large
// namespace.
CALL () { MATCH (n:Concept {kb: $kb}) RETURN count(n) AS concepts }
CALL () { MATCH (n:Insight {kb: $kb}) RETURN count(n) AS insights }
CALL () {
  MATCH (m:MetaConcept {kb: $kb})
  RETURN count(m) AS meta_concepts, sum(COUNT { (m)<-[:EXHIBITS]-() }) AS exhibits,
         sum(COUNT { (m)<-[:INSTANCE_OF]-() }) AS instance_of
}
CALL () {
  MATCH (e:Experience {kb: $kb})
  RETURN sum(COUNT { (e)-[:ABSTRACTION]->() }) AS abstraction, sum(COUNT { (e)-[:COMPOSITION]->() }) AS composition,
         sum(COUNT { (e)-[:ADAPTATION]->() }) AS adaptation, sum(COUNT { (e)-[:ALTERNATIVE]->() }) AS alternative
}
RETURN concepts, insights, meta_concepts,
       {ABSTRACTION: abstraction, COMPOSITION: composition, ADAPTATION: adaptation, ALTERNATIVE: alternative,
        EXHIBITS: exhibits, INSTANCE_OF: instance_of} AS relations;
