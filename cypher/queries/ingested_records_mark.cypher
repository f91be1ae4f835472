// Marks records as ingested, with what each record's content hashed to (so that a later record
// under the same id with other content is refused, not silently skipped).
// $kb; $rows: [{key, fingerprint}]
UNWIND $rows AS row
MERGE (r:IngestedRecord {kb: $kb, key: row.key})
ON CREATE SET r.ingested_at = datetime(), r.fingerprint = row.fingerprint
RETURN count(*) AS marked;
