// Export: every node of namespace $kb counted by its labels, whatever they are, so a label
// outside kbgraph's allow-list (kbgraph.transfer.NODE_LABELS) is noticed instead of silently left
// behind. A scan of all nodes (no index covers every label), run once per export. $kb
MATCH (n)
WHERE n.kb = $kb
RETURN labels(n) AS labels, count(*) AS count;
