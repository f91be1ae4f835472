// Search benchmark: experiences and steps in the whole database, every namespace (the vector and
// full-text indexes are database-wide, so other namespaces crowd a namespace's searches).
CALL () { MATCH (e:Experience) RETURN count(e) AS experiences }
CALL () { MATCH (s:Step) RETURN count(s) AS steps }
RETURN experiences, steps;
