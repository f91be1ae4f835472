// Namespace $kb's experience relations by type (declared and inferred), through each experience's
// degree by type (never by walking relationships). A consolidation from scratch counts them here;
// an incremental one adds what it changed (experience_relations_present, experience_relations_of).
MATCH (e:Experience {kb: $kb})
RETURN sum(COUNT { (e)-[:ABSTRACTION]->() }) AS ABSTRACTION, sum(COUNT { (e)-[:COMPOSITION]->() }) AS COMPOSITION,
       sum(COUNT { (e)-[:ADAPTATION]->() }) AS ADAPTATION, sum(COUNT { (e)-[:ALTERNATIVE]->() }) AS ALTERNATIVE;
