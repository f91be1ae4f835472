// The problem+goal vectors of experiences $ids of namespace $kb.
UNWIND $ids AS id
MATCH (e:Experience {kb: $kb, id: id})
RETURN e.id AS id, e.pg_embedding AS pg_embedding;
