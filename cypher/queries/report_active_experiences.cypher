// The learning state of every active experience of namespace $kb: what utility (quality, times,
// usage impact) and the AutoRefine maintenance score (counters) are computed from.
// Parameters: $kb (namespace), $problem_chars (maximum characters of the problem returned).
MATCH (e:Experience {kb: $kb, status: 'active'})
RETURN e.id AS id, left(coalesce(e.problem, ''), $problem_chars) AS problem, e.domain AS domain, e.kind AS kind,
       coalesce(e.quality, 0.5) AS quality, coalesce(e.retrieved, 0) AS retrieved, coalesce(e.used, 0) AS used,
       coalesce(e.succeeded, 0) AS succeeded, coalesce(e.usage_impact, 0.0) AS usage_impact,
       e.usage_impact_at AS usage_impact_at, e.last_used_at AS last_used_at, e.created_at AS created_at
ORDER BY id;
