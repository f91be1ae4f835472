// The namespaces whose name starts with $prefix (kbgraph.plan_warmup: the warm-ups' own, some left
// behind by a warm-up that was killed half-way), by their state node, which every namespace written
// to has.
MATCH (s:KbState)
WHERE s.kb STARTS WITH $prefix
RETURN DISTINCT s.kb AS kb;
