// Index status: is every index of the database ONLINE, and which are used?
//
// Every index — the ones backing kbgraph's constraints, range, vector (HNSW) and full-text
// indexes — with its state (ONLINE, POPULATING, FAILED), how far it is populated, and how often
// it has been read since the server started.
//
// This query has no $kb filter, on purpose: indexes are database-wide schema objects, one index
// covers the nodes of every namespace (Neo4j has no per-namespace index), and this listing holds
// only schema facts (names, labels, properties, states, counters), never a namespace's data.
//
// No parameters. In cypher-shell or Neo4j Browser run it as it is.
SHOW INDEXES
YIELD name, type, entityType, labelsOrTypes, properties, state, populationPercent, readCount, lastRead, options
RETURN name, type, state, populationPercent AS population_percent, entityType AS entity,
  labelsOrTypes AS labels_or_types, properties,
  CASE WHEN type = 'VECTOR' THEN options.indexConfig.`vector.dimensions` END AS vector_dimensions,
  readCount AS read_count, lastRead AS last_read
ORDER BY name;
