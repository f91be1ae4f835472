// Maintenance: archives (prunes, reversibly) the active experiences in $rows of namespace $kb,
// recording which run did it, when and why, so `restore` can undo exactly that run.
// $rows: [{id, reason, score}]; $run: the run's id; $now: its time.
UNWIND $rows AS row
MATCH (e:Experience {kb: $kb, id: row.id})
WHERE e.status = 'active'
SET e.status = 'archived', e.archived_run = $run, e.archived_at = $now,
    e.archived_reason = row.reason, e.archived_score = row.score
RETURN e.id AS id;
