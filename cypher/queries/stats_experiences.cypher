// Experiences of namespace $kb by status, kind and domain.
MATCH (e:Experience {kb: $kb})
RETURN e.status AS status, e.kind AS kind, e.domain AS domain, count(*) AS count
ORDER BY domain, kind, status;
