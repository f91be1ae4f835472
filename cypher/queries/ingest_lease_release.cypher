// Gives $owner's ingest lease on namespace $kb back.
MATCH (s:KbState {kb: $kb})
WHERE s.ingest_owner = $owner
REMOVE s.ingest_owner, s.ingest_lease_until
RETURN count(s) AS released;
