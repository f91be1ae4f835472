// The four experience relations of namespace $kb counted by the domains they join and by type
// (the report's domain-to-domain table). Both ends are matched inside the namespace.
// Parameters: $kb (namespace).
MATCH (a:Experience {kb: $kb})-[r:ABSTRACTION|COMPOSITION|ADAPTATION|ALTERNATIVE]->(b:Experience {kb: $kb})
RETURN a.domain AS source, b.domain AS target, type(r) AS type, count(r) AS count
ORDER BY source, target, type;
