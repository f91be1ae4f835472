// Teacher phase: identical failure modes as one group. For each error signature in $signatures
// (the same error on the same action, values masked), over namespace $kb's active experiences
// within the caller's scope and $domains, leaving out $exclude_runs: how often it was seen, in
// how many tasks, how often the fix went through, and how often the run then succeeded; and the
// recovery to show — concrete and followed by a run that succeeded first, then a concrete retry
// of the same call (it fixed this error, where a switch went around it), then any concrete one or
// a fix that went through, the nearest to $vector breaking ties.
UNWIND $signatures AS signature
MATCH (f:FailureMode {kb: $kb, signature: signature})<-[:HAS_FAILURE]-(e:Experience {kb: $kb})
WHERE e.status = 'active' AND NOT coalesce(f.run_id, '') IN $exclude_runs
  AND ($domains IS NULL OR toLower(e.domain) IN $domains)
  AND (coalesce(e.scope, 'shared') = 'shared' OR e.owner_agent = $agent)
WITH signature, f, e,
  CASE WHEN coalesce(f.concrete, false) AND coalesce(f.run_succeeded, false) THEN 3
       WHEN coalesce(f.concrete, false) AND f.recovery_kind = 'retry' THEN 2
       WHEN coalesce(f.concrete, false) OR coalesce(f.recovered, false) THEN 1 ELSE 0 END AS value
ORDER BY signature, value DESC, vector.similarity.cosine(f.embedding, $vector) DESC, f.id
WITH signature, collect({f: f, e: e, value: value}) AS members, collect(DISTINCT coalesce(e.task_key, e.id)) AS task_keys
RETURN signature, size(members) AS seen, size(task_keys) AS tasks,
  size([m IN members WHERE coalesce(m.f.recovered, false)]) AS recovered,
  size([m IN members WHERE coalesce(m.f.recovered, false) AND coalesce(m.f.run_succeeded, false)]) AS worked,
  [m IN members | m.f.run_id] AS runs,
  members[0].value AS value,
  {experience_id: members[0].e.id, problem: members[0].e.problem, goal: members[0].e.goal,
   domain: members[0].e.domain, failure_id: members[0].f.id, description: members[0].f.description,
   issue_type: members[0].f.issue_type, recovery: members[0].f.recovery, step_order: members[0].f.step_order,
   recovery_kind: members[0].f.recovery_kind, concrete: members[0].f.concrete, recovered: members[0].f.recovered,
   run_succeeded: members[0].f.run_succeeded, run_id: members[0].f.run_id} AS best;
