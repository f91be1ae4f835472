// The domains namespace $kb holds (its Domain nodes, one per domain an experience was written in),
// by name: kbgraph.search.student.warm reads the intent channel's history of each.
MATCH (d:Domain {kb: $kb})
RETURN d.name AS name
ORDER BY name;
