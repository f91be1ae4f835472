// Relationship counts by type among the nodes of namespace $kb.
MATCH (n)-[r]->()
WHERE n.kb = $kb
RETURN type(r) AS type, count(*) AS count
ORDER BY type;
