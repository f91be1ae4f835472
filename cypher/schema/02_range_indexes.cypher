// Namespace lookups (counts, exports, deletes) and the status filter of retrieval.
CREATE INDEX experience_kb_status IF NOT EXISTS FOR (n:Experience) ON (n.kb, n.status);
CREATE INDEX experience_kb IF NOT EXISTS FOR (n:Experience) ON (n.kb);
// The experiences written since the last consolidation (marked `unlinked`): what it merges and links.
CREATE INDEX experience_kb_unlinked IF NOT EXISTS FOR (n:Experience) ON (n.kb, n.unlinked);
// The runs of one task (search weighs a way by the share of the task's successful runs it took).
CREATE INDEX experience_kb_task IF NOT EXISTS FOR (n:Experience) ON (n.kb, n.task_key);
CREATE INDEX step_kb IF NOT EXISTS FOR (n:Step) ON (n.kb);
CREATE INDEX step_text_kb IF NOT EXISTS FOR (n:StepText) ON (n.kb);
CREATE INDEX failure_mode_kb IF NOT EXISTS FOR (n:FailureMode) ON (n.kb);
// Identical failure modes (the same error on the same action) are one group in the teacher phase.
CREATE INDEX failure_mode_kb_signature IF NOT EXISTS FOR (n:FailureMode) ON (n.kb, n.signature);
CREATE INDEX meta_concept_kb IF NOT EXISTS FOR (n:MetaConcept) ON (n.kb);
CREATE INDEX insight_concept IF NOT EXISTS FOR (n:Insight) ON (n.kb, n.concept_id);
CREATE INDEX concept_kb IF NOT EXISTS FOR (n:Concept) ON (n.kb);
CREATE INDEX insight_kb IF NOT EXISTS FOR (n:Insight) ON (n.kb);
CREATE INDEX domain_kb IF NOT EXISTS FOR (n:Domain) ON (n.kb);
// LangGraph store: the sweep of expired items.
CREATE INDEX store_item_expiry IF NOT EXISTS FOR (n:StoreItem) ON (n.kb, n.expires_at);
