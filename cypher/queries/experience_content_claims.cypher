// Of $rows ({id, content_id}: experiences about to be written under explicit ids), those whose id
// namespace $kb stores with other content (experiences stored before kbgraph kept a content_id
// are unknown content, not a conflict). Run first in the transaction that writes them: it takes
// the write lock of the namespace's state node, held to the commit, so two clients writing one id
// with different contents are serialised and the second one finds the first's content.
MERGE (s:KbState {kb: $kb})
ON CREATE SET s.added_total = 0
SET s._lock = true
REMOVE s._lock
WITH s
UNWIND $rows AS row
MATCH (e:Experience {kb: $kb, id: row.id})
WHERE e.content_id IS NOT NULL AND e.content_id <> row.content_id
RETURN row.id AS id;
