// Takes namespace $kb's ingest lease for $owner until $until, unless another live owner holds it
// (a lease past its time is free: its holder died). The state node is written, so two callers
// are serialised by its lock and exactly one of them acquires.
// $kb; $owner; $now, $until: datetimes
MERGE (s:KbState {kb: $kb})
ON CREATE SET s.added_total = 0
SET s._lock = true
WITH s, (s.ingest_owner IS NULL OR s.ingest_owner = $owner OR s.ingest_lease_until < $now) AS free
SET s.ingest_owner = CASE WHEN free THEN $owner ELSE s.ingest_owner END,
    s.ingest_lease_until = CASE WHEN free THEN $until ELSE s.ingest_lease_until END
REMOVE s._lock
RETURN free AS acquired, s.ingest_owner AS holder, toString(s.ingest_lease_until) AS until;
