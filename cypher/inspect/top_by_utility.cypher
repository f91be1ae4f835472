// Top experiences by utility: which active experiences of a domain are worth most now?
//
// One domain, or every domain when $domain is null.
// Utility is Agent KB D.3 as kbgraph defines it (kbgraph.core.utility.utility computes the same):
//   U = quality · exp(−λ · days since last_used_at, or created_at when never used)
//     + usage_impact · exp(−λ · days since usage_impact_at)        clipped to [0, 1]
// with λ = $decay_per_day, days counted as whole calendar days (UTC), as the searches count them
// (kbgraph.core.utility.calendar_days_between), so this is the utility the ranking used. A timestamp
// in the future (clock skew) counts as 0 days. Both terms decay unless agents keep using the
// experience; usage_impact is the sum of ± steps agents' successes and failures added
// (kb.record_feedback). days_idle: calendar days since the last use (or since creation, for an
// experience never used).
//
// @param kb "default" — the namespace (kbgraph cypher run fills it from --namespace / settings)
// @param domain null — the domain (Experience.domain, see the `domains` query); null = every domain
// @param decay_per_day 0.0231 — λ per day; 0.0231 ≈ ln 2 / 30, so utility halves in 30 days unused
// @param limit 10 — how many experiences
// @param now null — the moment utility is computed for, as a datetime; null = the server's clock now
//
// In cypher-shell or Neo4j Browser set the parameters first (kbgraph demo's namespace is "demo"):
// :param kb => "default"
// :param domain => null
// :param decay_per_day => 0.0231
// :param limit => 10
// :param now => null
MATCH (e:Experience {kb: $kb, status: 'active'})
WHERE $domain IS NULL OR e.domain = $domain
WITH e, coalesce($now, datetime()) AS now
WITH e, date(datetime({datetime: now, timezone: 'Z'})) AS today,
  date(datetime({datetime: coalesce(e.last_used_at, e.created_at, now), timezone: 'Z'})) AS recent_day,
  date(datetime({datetime: coalesce(e.usage_impact_at, now), timezone: 'Z'})) AS impact_day
WITH e, duration.inDays(recent_day, today).days AS days_recent, duration.inDays(impact_day, today).days AS days_impact
WITH e, CASE WHEN days_recent > 0 THEN days_recent ELSE 0 END AS days_idle,
  CASE WHEN days_impact > 0 THEN days_impact ELSE 0 END AS days_impact
WITH e, days_idle,
  coalesce(e.quality, 0.5) * exp(-$decay_per_day * days_idle)
  + coalesce(e.usage_impact, 0.0) * exp(-$decay_per_day * days_impact) AS raw_utility
WITH e, days_idle, CASE WHEN raw_utility < 0 THEN 0.0 WHEN raw_utility > 1 THEN 1.0 ELSE raw_utility END AS utility
RETURN e.id AS id, e.domain AS domain, e.kind AS kind, utility,
  coalesce(e.quality, 0.5) AS quality, e.usage_impact AS usage_impact, days_idle,
  coalesce(e.used, 0) AS used, coalesce(e.succeeded, 0) AS succeeded, coalesce(e.retrieved, 0) AS retrieved,
  e.problem AS problem
ORDER BY utility DESC, id
LIMIT $limit;
