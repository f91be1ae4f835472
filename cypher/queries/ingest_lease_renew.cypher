// Extends $owner's ingest lease on namespace $kb to $until (nothing if it is no longer theirs).
MATCH (s:KbState {kb: $kb})
WHERE s.ingest_owner = $owner
SET s.ingest_lease_until = $until
RETURN count(s) AS renewed;
