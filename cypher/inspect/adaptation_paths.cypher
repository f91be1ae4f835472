// Adaptation paths between two domains: how did experience of one domain reach another?
//
// Paths from an experience of $from_domain to one of $to_domain along relation edges, in their
// stored direction, of up to 3 hops (and at most $max_hops). ADAPTATION edges by default; add
// ABSTRACTION, COMPOSITION or ALTERNATIVE to $relation_types to also pass through abstractions,
// composite workflows or alternatives. Shortest first, then by the product of the edge weights
// (the decay graph search applies along a path). Every node of a path is in $kb; archived and
// rejected experiences are included (their status is listed). `path` is for Neo4j Browser.
//
// @param kb "default" — the namespace (kbgraph cypher run fills it from --namespace / settings)
// @param from_domain required — the domain the paths start in (see the `domains` query)
// @param to_domain required — the domain the paths end in
// @param relation_types ["ADAPTATION"] — edge types a path may use: any of ABSTRACTION, COMPOSITION, ADAPTATION, ALTERNATIVE
// @param max_hops 3 — at most this many edges (1 to 3)
// @param limit 25 — how many paths
//
// In cypher-shell or Neo4j Browser set the parameters first (kbgraph demo's namespace is "demo"):
// :param kb => "default"
// :param from_domain => "banking"
// :param to_domain => "retail"
// :param relation_types => ["ADAPTATION"]
// :param max_hops => 3
// :param limit => 25
MATCH (start:Experience {kb: $kb, domain: $from_domain})
MATCH path = (start)-[rels:ABSTRACTION|COMPOSITION|ADAPTATION|ALTERNATIVE*1..3]->(finish:Experience {kb: $kb, domain: $to_domain})
WHERE length(path) <= $max_hops
  AND all(r IN rels WHERE type(r) IN $relation_types)
  AND all(n IN nodes(path) WHERE n.kb = $kb)
WITH path, rels, reduce(weight = 1.0, r IN rels | weight * coalesce(r.weight, 1.0)) AS weight
RETURN length(path) AS hops, weight,
  [n IN nodes(path) | n.domain + ': ' + n.id] AS experiences,
  [r IN rels | type(r)] AS relations,
  [r IN rels | r.reason] AS reasons,
  [n IN nodes(path) | n.status] AS statuses,
  path
ORDER BY hops, weight DESC, experiences
LIMIT $limit;
