// Meta-concepts with their documents. $kb; $rows: [{id, name, verbs, embedding, version, size,
// when_to_use, why, how, pitfalls, document, statements}] — verbs: the state changes its operation
// makes (kbgraph.ingest.concepts.operation_verbs); statements: the document's statements with their
// evidence and sources, as JSON text (kbgraph.ingest.integrate_evidence).
UNWIND $rows AS row
MERGE (m:MetaConcept {kb: $kb, id: row.id})
SET m.name = row.name, m.verbs = row.verbs, m.version = row.version, m.size = row.size, m.when_to_use = row.when_to_use,
    m.why = row.why, m.how = row.how, m.pitfalls = row.pitfalls, m.document = row.document,
    m.statements = row.statements
WITH m, row
CALL db.create.setNodeVectorProperty(m, 'embedding', row.embedding)
RETURN count(*) AS written;
