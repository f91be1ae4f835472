// Archives — never deletes — the generated abstract experiences (workflows) of namespace $kb whose
// workflow is no longer shared by two or more active experiences (their instances were merged or
// archived). They keep their counters and steps: `restore` (by run $run or id) brings them back,
// and they come back by themselves when their workflow is shared again (refresh).
// $keep: the workflow ids that still exist; $source: the marker generated abstractions carry in
// `source`; $run, $now: the run that dissolved them and its time.
MATCH (e:Experience {kb: $kb, kind: 'abstract', source: $source})
WHERE NOT e.id IN $keep AND e.status = 'active'
SET e.status = 'archived', e.dissolved = true, e.archived_run = $run, e.archived_at = $now,
    e.archived_reason = 'its workflow is no longer shared by two or more active experiences',
    e.archived_score = null
RETURN e.id AS id
ORDER BY id;
