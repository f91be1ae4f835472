// Which of the record keys $keys ("trajectory:<id>", "experience:<id>") namespace $kb has
// ingested completely before.
UNWIND $keys AS key
MATCH (r:IngestedRecord {kb: $kb, key: key})
RETURN collect(r.key) AS keys;
