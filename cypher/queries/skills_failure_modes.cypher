// Skills export: the failure modes of the experiences $ids of namespace $kb — what went wrong at
// which step of which run, and what the agent did next (the recovery, whether it got past the
// error, whether the run then succeeded) and its record (JSON: the operation, the error class, what was done next).
UNWIND $ids AS id
MATCH (e:Experience {kb: $kb, id: id})-[:HAS_FAILURE]->(f:FailureMode)
RETURN e.id AS experience_id, f.id AS id, f.description AS description, f.action AS action,
  f.signature AS signature, f.signature_action AS signature_action, f.signature_error AS signature_error,
  f.recovery AS recovery, f.recovery_kind AS recovery_kind,
  f.recovered AS recovered, f.concrete AS concrete, f.run_id AS run_id, f.run_succeeded AS run_succeeded,
  f.step_order AS step_order, f.record AS record
ORDER BY experience_id, step_order, id;
