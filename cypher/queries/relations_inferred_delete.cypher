// Drops the relations kbgraph inferred (they are recomputed whole), keeping declared ones. $kb
MATCH (:Experience {kb: $kb})-[r:ABSTRACTION|COMPOSITION|ADAPTATION|ALTERNATIVE]->(:Experience)
WHERE r.inferred = true
DELETE r
RETURN count(*) AS deleted;
