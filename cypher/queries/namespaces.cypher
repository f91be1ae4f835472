// Namespaces that hold experiences, with their sizes.
MATCH (e:Experience)
RETURN e.kb AS namespace, count(*) AS experiences
ORDER BY namespace;
