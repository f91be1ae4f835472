// The state node of namespace $kb (growth counter, last maintenance run), if any.
MATCH (s:KbState {kb: $kb})
RETURN s.added_total AS added_total, s.last_maintenance_run AS last_maintenance_run,
  s.last_maintenance_at AS last_maintenance_at, s.last_maintenance_trigger AS last_maintenance_trigger,
  coalesce(s.maintenance_runs, 0) AS maintenance_runs, s.relink_pending AS relink_pending;
