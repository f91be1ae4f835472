// Of the record keys $keys, those namespace $kb has ingested, with their content fingerprint
// (null for records marked before kbgraph kept one) and when.
UNWIND $keys AS key
MATCH (r:IngestedRecord {kb: $kb, key: key})
RETURN r.key AS key, r.fingerprint AS fingerprint, toString(r.ingested_at) AS ingested_at;
