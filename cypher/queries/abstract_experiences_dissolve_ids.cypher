// abstract_experiences_dissolve for the workflows $ids of namespace $kb only: an incremental
// consolidation knows which workflows stopped being shared. Archived, never deleted.
// $source: the marker generated abstractions carry in `source`; $run, $now: the dissolving run.
UNWIND $ids AS id
MATCH (e:Experience {kb: $kb, id: id})
WHERE e.kind = 'abstract' AND e.source = $source AND e.status = 'active'
SET e.status = 'archived', e.dissolved = true, e.archived_run = $run, e.archived_at = $now,
    e.archived_reason = 'its workflow is no longer shared by two or more active experiences',
    e.archived_score = null
RETURN e.id AS id
ORDER BY id;
