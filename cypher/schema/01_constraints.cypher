// Uniqueness of every node's key within a namespace (kb). Composite uniqueness constraints are
// available in Community Edition and back MERGE with an index, which also makes concurrent
// MERGEs of the same key safe.
CREATE CONSTRAINT experience_key IF NOT EXISTS FOR (n:Experience) REQUIRE (n.kb, n.id) IS UNIQUE;
CREATE CONSTRAINT step_key IF NOT EXISTS FOR (n:Step) REQUIRE (n.kb, n.id) IS UNIQUE;
// One vector per distinct step text of a namespace: key = sha256 of the embedded text `action: text`.
CREATE CONSTRAINT step_text_key IF NOT EXISTS FOR (n:StepText) REQUIRE (n.kb, n.key) IS UNIQUE;
CREATE CONSTRAINT failure_mode_key IF NOT EXISTS FOR (n:FailureMode) REQUIRE (n.kb, n.id) IS UNIQUE;
CREATE CONSTRAINT concept_key IF NOT EXISTS FOR (n:Concept) REQUIRE (n.kb, n.id) IS UNIQUE;
CREATE CONSTRAINT meta_concept_key IF NOT EXISTS FOR (n:MetaConcept) REQUIRE (n.kb, n.id) IS UNIQUE;
CREATE CONSTRAINT insight_key IF NOT EXISTS FOR (n:Insight) REQUIRE (n.kb, n.id) IS UNIQUE;
CREATE CONSTRAINT domain_key IF NOT EXISTS FOR (n:Domain) REQUIRE (n.kb, n.name) IS UNIQUE;
CREATE CONSTRAINT agent_key IF NOT EXISTS FOR (n:Agent) REQUIRE (n.kb, n.id) IS UNIQUE;
// Records (trajectories, ready-made experiences) already ingested in a namespace: written in the
// same transaction as a record's concepts and insights, the last write of its pass-1 work.
CREATE CONSTRAINT ingested_record_key IF NOT EXISTS FOR (n:IngestedRecord) REQUIRE (n.kb, n.key) IS UNIQUE;
CREATE CONSTRAINT kb_state_key IF NOT EXISTS FOR (n:KbState) REQUIRE n.kb IS UNIQUE;
// A namespace's feedback version, in stripes (kbgraph.store.search_version).
CREATE CONSTRAINT feedback_stripe_key IF NOT EXISTS FOR (n:FeedbackStripe) REQUIRE (n.kb, n.stripe) IS UNIQUE;
CREATE CONSTRAINT outcome_key IF NOT EXISTS FOR (n:Outcome) REQUIRE (n.kb, n.id) IS UNIQUE;
// LangGraph store (kbgraph.integrations.langgraph): an item's id is its namespace path and key;
// a vector's, its item's id and the field embedded.
CREATE CONSTRAINT store_item_key IF NOT EXISTS FOR (n:StoreItem) REQUIRE (n.kb, n.id) IS UNIQUE;
CREATE CONSTRAINT store_vector_key IF NOT EXISTS FOR (n:StoreVector) REQUIRE (n.kb, n.id) IS UNIQUE;
