// Deletes every node of namespace $kb, in batches (needs an auto-commit transaction).
MATCH (n:Experience|Step|StepText|FailureMode|Domain|Concept|MetaConcept|Insight|Agent|IngestedRecord|KbState|FeedbackStripe|Outcome|StoreItem|StoreVector)
WHERE n.kb = $kb
CALL (n) {
  DETACH DELETE n
} IN TRANSACTIONS OF 5000 ROWS;
