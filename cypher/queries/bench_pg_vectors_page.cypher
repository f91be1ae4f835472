// Search benchmark, brute-force baseline: a page of the problem+goal vectors of the active
// experiences of namespace $kb, in id order. $after: last id of the previous page ('' first); $limit
MATCH (e:Experience {kb: $kb})
WHERE e.id > $after AND e.status = 'active' AND e.pg_embedding IS NOT NULL
RETURN e.id AS id, e.pg_embedding AS vector
ORDER BY id
LIMIT $limit;
