// The evaluation's fingerprint of namespace $kb (kbgraph.search.eval.cached_namespace): every node
// of the labels ingestion writes, with its properties less the vectors (keys ending in
// 'embedding') and its outgoing relationships (type, the other end's key, properties). The
// KbState node is left out: it holds bookkeeping (leases, growth) and the fingerprint itself; so
// are the step vectors (StepText) and the SAYS edges to them, which follow from the steps' texts:
// a namespace migrated to one vector per step text keeps its fingerprint.
MATCH (n:Experience|Step|FailureMode|Domain|Concept|MetaConcept|Insight|Agent|IngestedRecord|Outcome)
WHERE n.kb = $kb
RETURN labels(n)[0] AS label,
  coalesce(n.id, n.key, n.name) AS key,
  [k IN keys(n) WHERE NOT k ENDS WITH 'embedding' | [k, n[k]]] AS properties,
  [(n)-[r]->(m) WHERE type(r) <> 'SAYS' | [type(r), coalesce(m.id, m.key, m.name), [k IN keys(r) | [k, r[k]]]]] AS relations;
