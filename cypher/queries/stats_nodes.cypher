// Node counts by label in namespace $kb.
MATCH (n)
WHERE n.kb = $kb
UNWIND labels(n) AS label
RETURN label, count(*) AS count
ORDER BY label;
