// Refreshes generated abstract experiences (workflows) that already exist. Their id is the
// workflow's (domain and operations), so it stays while their group grows, but what they say
// follows the group: the success rate over all instances' runs, the generalizability, the usual
// steps. Their learning state (counters, quality, status) is kept; one archived because its
// workflow had dissolved is active again, the workflow being shared again. Only those whose
// content changed (another content_id: other usual steps) get new steps and embeddings, from
// abstract_experiences_rewrite in the same transaction.
// $kb; $rows: [{id, content: {...}, success_rate}]. Returns each one's id, and whether it came back
// (`back`: its members' rows change, kbgraph.store.search_version's change feed).
UNWIND $rows AS row
MATCH (e:Experience {kb: $kb, id: row.id})
SET e += row.content, e.success_rate = row.success_rate
WITH e, e.dissolved = true AS back
SET e.status = CASE WHEN back THEN 'active' ELSE e.status END,
    e.archived_run = CASE WHEN back THEN null ELSE e.archived_run END,
    e.archived_at = CASE WHEN back THEN null ELSE e.archived_at END,
    e.archived_reason = CASE WHEN back THEN null ELSE e.archived_reason END,
    e.dissolved = null
RETURN e.id AS id, back;
