// Marks records as ingested. $kb; $keys
UNWIND $keys AS key
MERGE (r:IngestedRecord {kb: $kb, key: key})
ON CREATE SET r.ingested_at = datetime()
RETURN count(*) AS marked;
