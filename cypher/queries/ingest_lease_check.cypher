// The first statement of an add's one write transaction (kbgraph/ingest/one_transaction.py):
// locks namespace $kb's state node until that transaction ends — another add, an ingest taking
// the lease, a growth count or a facts-version change waits for its commit — and says whether an
// ingest that writes in many transactions holds the namespace's lease (kbgraph/ingest/lease.py):
// then the add rolls back and waits for it. A lease past its time is free: its holder died.
// $kb; $now: datetime
MERGE (s:KbState {kb: $kb})
ON CREATE SET s.added_total = 0
SET s._lock = true
REMOVE s._lock
RETURN (s.ingest_owner IS NULL OR s.ingest_lease_until < $now) AS free, s.ingest_owner AS holder,
       toString(s.ingest_lease_until) AS until;
