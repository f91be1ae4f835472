// Experiences of namespace $kb grouped by domain, status, kind and scope, with the sums behind
// the report's per-domain means (success rate, quality) and the groups' counts by scope.
// Parameters: $kb (namespace).
MATCH (e:Experience {kb: $kb})
RETURN e.domain AS domain, e.status AS status, e.kind AS kind, coalesce(e.scope, 'shared') AS scope,
       count(*) AS count, sum(coalesce(e.success_rate, 0.0)) AS success_sum,
       sum(coalesce(e.quality, 0.5)) AS quality_sum
ORDER BY domain, status, kind, scope;
