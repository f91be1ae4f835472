// Node counts by label in namespace $kb, each label counted through its own kb index (every
// label kbgraph writes: a label left out here reads as an empty namespace in `kbgraph stats`),
// but the feedback version's stripes (cache tokens, not exported: kbgraph.transfer.NOT_EXPORTED).
CALL () {
  MATCH (n:Experience {kb: $kb}) RETURN 'Experience' AS label, count(n) AS count
  UNION ALL MATCH (n:Step {kb: $kb}) RETURN 'Step' AS label, count(n) AS count
  UNION ALL MATCH (n:StepText {kb: $kb}) RETURN 'StepText' AS label, count(n) AS count
  UNION ALL MATCH (n:FailureMode {kb: $kb}) RETURN 'FailureMode' AS label, count(n) AS count
  UNION ALL MATCH (n:Domain {kb: $kb}) RETURN 'Domain' AS label, count(n) AS count
  UNION ALL MATCH (n:Concept {kb: $kb}) RETURN 'Concept' AS label, count(n) AS count
  UNION ALL MATCH (n:MetaConcept {kb: $kb}) RETURN 'MetaConcept' AS label, count(n) AS count
  UNION ALL MATCH (n:Insight {kb: $kb}) RETURN 'Insight' AS label, count(n) AS count
  UNION ALL MATCH (n:Agent {kb: $kb}) RETURN 'Agent' AS label, count(n) AS count
  UNION ALL MATCH (n:IngestedRecord {kb: $kb}) RETURN 'IngestedRecord' AS label, count(n) AS count
  UNION ALL MATCH (n:KbState {kb: $kb}) RETURN 'KbState' AS label, count(n) AS count
  UNION ALL MATCH (n:Outcome {kb: $kb}) RETURN 'Outcome' AS label, count(n) AS count
  UNION ALL MATCH (n:StoreItem {kb: $kb}) RETURN 'StoreItem' AS label, count(n) AS count
  UNION ALL MATCH (n:StoreVector {kb: $kb}) RETURN 'StoreVector' AS label, count(n) AS count
}
WITH label, count
WHERE count > 0
RETURN label, count
ORDER BY label;
