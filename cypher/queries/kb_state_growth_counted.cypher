// Counts, in the transaction that writes them and before they are written, the experiences of
// $ids (a write batch's distinct ids) that namespace $kb does not hold yet into its growth total.
// Committed with the experiences, the count survives a crash that the ingest's end does not: a
// resumed ingest finds those experiences stored and would otherwise never count them. The state
// node's lock comes first, so two writers of one new id are serialised and only the first counts it.
// An older namespace (no growth_checked yet) has checked all it counted before: that is kept.
// $kb; $ids: [id]
MERGE (s:KbState {kb: $kb})
ON CREATE SET s.added_total = 0
SET s._lock = true
WITH s
OPTIONAL MATCH (e:Experience {kb: $kb}) WHERE e.id IN $ids
WITH s, count(e) AS stored
SET s.growth_checked = coalesce(s.growth_checked, s.added_total, 0),
    s.added_total = coalesce(s.added_total, 0) + size($ids) - stored
REMOVE s._lock
RETURN s.added_total AS added_total;
