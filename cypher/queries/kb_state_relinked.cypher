// Maintenance run $run of namespace $kb has finished its relinking (any earlier run's pending
// relinking is covered by it too).
MATCH (s:KbState {kb: $kb})
REMOVE s.relink_pending
RETURN s.last_maintenance_run AS run;
