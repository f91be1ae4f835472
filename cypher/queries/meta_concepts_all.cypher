// Every meta-concept of namespace $kb with its document sections and statements (JSON).
MATCH (m:MetaConcept {kb: $kb})
RETURN m.id AS id, m.name AS name, m.embedding AS embedding, m.version AS version, m.size AS size, m.document AS document,
       m.statements AS statements,
       m.when_to_use AS when_to_use, m.why AS why, m.how AS how, m.pitfalls AS pitfalls
ORDER BY id;
