// Candidates for pruning: which experiences earn their place least?
//
// The active experiences agents have had a fair chance to use (retrieved at least $min_retrieved
// times) ranked by AutoRefine's maintenance score, lowest first:
//   score = s/(u+ε) · log(1+u) · (1 + u/(r+ε))    s = succeeded, u = used, r = retrieved, ε = $epsilon
// (kbgraph.core.utility.maintenance_score computes the same). 0 means never used, or used and
// never successful. `in_bottom_fraction` marks the lowest $prune_fraction of all candidates (ties
// broken by id): the share kbgraph's maintenance archives (reversibly) when it prunes.
//
// @param kb "default" — the namespace (kbgraph cypher run fills it from --namespace / settings)
// @param min_retrieved 3 — only experiences retrieved at least this often (younger ones have no record yet)
// @param epsilon 0.01 — AutoRefine's ε
// @param prune_fraction 0.2 — the share maintenance archives (settings.learning.prune_fraction)
// @param limit 20 — how many candidates
//
// In cypher-shell or Neo4j Browser set the parameters first (kbgraph demo's namespace is "demo"):
// :param kb => "default"
// :param min_retrieved => 3
// :param epsilon => 0.01
// :param prune_fraction => 0.2
// :param limit => 20
MATCH (e:Experience {kb: $kb, status: 'active'})
WHERE coalesce(e.retrieved, 0) >= $min_retrieved
WITH e, coalesce(e.succeeded, 0) AS s, coalesce(e.used, 0) AS u, coalesce(e.retrieved, 0) AS r
WITH e, s, u, r, toFloat(s) / (u + $epsilon) * log(1 + u) * (1 + u / (r + $epsilon)) AS score
ORDER BY score, e.id
WITH collect({e: e, s: s, u: u, r: r, score: score}) AS ranked
WITH ranked, toInteger(floor(size(ranked) * $prune_fraction + 0.000000001)) AS cut
UNWIND range(0, size(ranked) - 1) AS position
WITH ranked[position] AS candidate, position, cut
RETURN position + 1 AS rank, candidate.e.id AS id, candidate.score AS score,
  position < cut AS in_bottom_fraction,
  candidate.r AS retrieved, candidate.u AS used, candidate.s AS succeeded,
  coalesce(candidate.e.quality, 0.5) AS quality, candidate.e.domain AS domain, candidate.e.kind AS kind, candidate.e.problem AS problem
ORDER BY rank
LIMIT $limit;
