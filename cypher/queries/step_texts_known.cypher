// Which of $keys (step text keys: sha256 of `action: text`) namespace $kb holds a vector for
// (ExperienceWriter.embed_missing embeds only the others).
UNWIND $keys AS key
MATCH (v:StepText {kb: $kb, key: key})
WHERE v.embedding IS NOT NULL
RETURN collect(v.key) AS keys;
