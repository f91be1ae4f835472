// Every index of the database with its state; kbgraph's own are named in cypher/schema/.
SHOW INDEXES
YIELD name, type, entityType, labelsOrTypes, properties, state, populationPercent
RETURN name, type, entityType, labelsOrTypes, properties, state, populationPercent
ORDER BY name;
