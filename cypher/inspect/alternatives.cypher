// Alternatives to an experience: which other approaches solve the same problem and goal?
//
// ALTERNATIVE edges in either direction (the linker stores each pair once), strongest first, with
// the edge's weight and the reason it was made. `path` lets Neo4j Browser draw each pair.
//
// @param kb "default" — the namespace (kbgraph cypher run fills it from --namespace / settings)
// @param id required — the experience's id (from search results, `kbgraph get`, or top_by_utility)
//
// In cypher-shell or Neo4j Browser set the parameters first (kbgraph demo's namespace is "demo"):
// :param kb => "default"
// :param id => "PASTE-AN-EXPERIENCE-ID"
MATCH (e:Experience {kb: $kb, id: $id})
MATCH path = (e)-[r:ALTERNATIVE]-(alternative:Experience {kb: $kb})
RETURN alternative.id AS id, CASE WHEN startNode(r) = e THEN 'outgoing' ELSE 'incoming' END AS direction,
  r.weight AS weight, r.reason AS reason, r.inferred AS inferred,
  alternative.domain AS domain, alternative.kind AS kind, alternative.status AS status,
  alternative.success_rate AS success_rate, alternative.quality AS quality,
  alternative.actions AS actions, alternative.problem AS problem, path
ORDER BY weight DESC, id;
