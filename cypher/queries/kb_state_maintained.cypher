// Records a maintenance run on namespace $kb's state node: its id, time, trigger and what it did.
// With $relink_pending, the run's relinking is still to do (kb_state_relinked clears it): a run
// interrupted in between is finished by the next one.
MERGE (s:KbState {kb: $kb})
ON CREATE SET s.added_total = 0
SET s.last_maintenance_run = $run, s.last_maintenance_at = $now, s.last_maintenance_trigger = $trigger,
    s.last_maintenance_archived = $archived, s.last_maintenance_merged = $merged,
    s.maintenance_runs = coalesce(s.maintenance_runs, 0) + 1,
    s.relink_pending = CASE WHEN $relink_pending THEN $run ELSE s.relink_pending END
RETURN s.maintenance_runs AS runs;
