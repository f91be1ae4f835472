// Restores archived experiences of namespace $kb: those in $ids, or every one archived by run $run.
// They become active (searchable) again with their counters as they were; the archive marks go.
MATCH (e:Experience {kb: $kb})
WHERE e.status = 'archived' AND (e.id IN $ids OR ($run IS NOT NULL AND e.archived_run = $run))
SET e.status = 'active', e.restored_at = $now
REMOVE e.archived_run, e.archived_at, e.archived_reason, e.archived_score, e.dissolved
RETURN e.id AS id
ORDER BY id;
