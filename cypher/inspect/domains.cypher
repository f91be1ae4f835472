// Domains of a namespace: where is the experience, how good is it, and how is it connected?
//
// A starting point for the other queries (their $domain, $from_domain and $to_domain).
//
// Per domain: experiences by status and kind, mean success rate and quality of the active ones,
// and the relation edges leaving the domain's experiences for another domain (ADAPTATION and
// the others), which adaptation_paths follows.
//
// @param kb "default" — the namespace (kbgraph cypher run fills it from --namespace / settings)
//
// In cypher-shell or Neo4j Browser set the parameters first (kbgraph demo's namespace is "demo"):
// :param kb => "default"
MATCH (e:Experience {kb: $kb})
WITH e.domain AS domain, collect(e) AS experiences,
  avg(CASE WHEN e.status = 'active' THEN coalesce(e.success_rate, 1.0) END) AS mean_success,
  avg(CASE WHEN e.status = 'active' THEN coalesce(e.quality, 0.5) END) AS mean_quality
CALL (experiences) {
  UNWIND experiences AS e
  OPTIONAL MATCH (e)-[r:ABSTRACTION|COMPOSITION|ADAPTATION|ALTERNATIVE]->(other:Experience {kb: $kb})
  WHERE other.domain <> e.domain
  RETURN count(r) AS edges_to_other_domains, collect(DISTINCT other.domain) AS reaches
}
RETURN domain,
  size(experiences) AS experiences,
  size([e IN experiences WHERE e.status = 'active']) AS active,
  size([e IN experiences WHERE e.status = 'archived']) AS archived,
  size([e IN experiences WHERE e.status = 'rejected']) AS rejected,
  size([e IN experiences WHERE e.kind = 'abstract']) AS abstract,
  round(mean_success, 3) AS mean_success, round(mean_quality, 3) AS mean_quality,
  edges_to_other_domains, reaches
ORDER BY experiences DESC, domain;
