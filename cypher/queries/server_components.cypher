// The Neo4j release and edition of the server (kbgraph server status, kbgraph stats); on 2026.x
// also a row named "Cypher" listing the language versions it accepts.
CALL dbms.components() YIELD name, versions, edition
RETURN name, versions, edition;
