// Export: every relationship touching a node of namespace $kb, counted by start labels, type, end
// labels and whether the other end belongs to $kb too (inside). Outgoing relationships are all
// counted; incoming ones only when they come from outside $kb (the inside ones are some other
// node's outgoing ones). Relationships that cross namespaces are never exported; the census says
// how many there are. A scan of all nodes, run once per export. $kb
MATCH (a)
WHERE a.kb = $kb
CALL (a) {
  MATCH (a)-[r]->(b)
  RETURN type(r) AS type, labels(b) AS end_labels, coalesce(b.kb = $kb, false) AS inside, true AS outgoing
  UNION ALL
  MATCH (a)<-[r]-(b)
  WHERE coalesce(b.kb <> $kb, true)
  RETURN type(r) AS type, labels(b) AS end_labels, false AS inside, false AS outgoing
}
RETURN labels(a) AS start_labels, type, end_labels, inside, outgoing, count(*) AS count;
