// Relationship counts by type, from the nodes of namespace $kb (found through their kb indexes).
CALL () {
  MATCH (:Experience {kb: $kb})-[r]->() RETURN type(r) AS type, count(r) AS count
  UNION ALL MATCH (:Step {kb: $kb})-[r]->() RETURN type(r) AS type, count(r) AS count
  UNION ALL MATCH (:Concept {kb: $kb})-[r]->() RETURN type(r) AS type, count(r) AS count
  UNION ALL MATCH (:Insight {kb: $kb})-[r]->() RETURN type(r) AS type, count(r) AS count
  UNION ALL MATCH (:Agent {kb: $kb})-[r]->() RETURN type(r) AS type, count(r) AS count
  UNION ALL MATCH (:StoreItem {kb: $kb})-[r]->() RETURN type(r) AS type, count(r) AS count
}
WITH type, sum(count) AS count
WHERE count > 0
RETURN type, count
ORDER BY type;
