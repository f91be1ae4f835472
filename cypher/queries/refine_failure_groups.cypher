// Teacher phase: identical failure modes as one group, counted per kind of recovery. For each
// error signature in $signatures (the same error on the same action, values masked) and each
// recovery kind (retry, repeat, switch, none) its failure modes were followed by, over namespace
// $kb's active experiences within the caller's scope and $domains, leaving out $exclude_runs:
// how often it was tried, how often the fix went through, how often it went through and the run
// then succeeded (`worked`), the tasks and runs it comes from, the nearest member's cosine score
// to $vector (normalised as the index's, (1 + cos) / 2), and the member to show: one that worked
// first, then a concrete one (it names what to do), the nearest to $vector breaking ties.
UNWIND $signatures AS signature
MATCH (f:FailureMode {kb: $kb, signature: signature})<-[:HAS_FAILURE]-(e:Experience {kb: $kb})
WHERE e.status = 'active' AND NOT coalesce(f.run_id, '') IN $exclude_runs
  AND ($domains IS NULL OR toLower(e.domain) IN $domains)
  AND (coalesce(e.scope, 'shared') = 'shared' OR e.owner_agent = $agent)
WITH signature, coalesce(f.recovery_kind, 'none') AS kind, f, e,
  coalesce(f.recovered, false) AND coalesce(f.run_succeeded, false) AS worked,
  vector.similarity.cosine(f.embedding, $vector) AS score
ORDER BY signature, kind, worked DESC, coalesce(f.concrete, false) DESC, score DESC, f.id
WITH signature, kind, collect({f: f, e: e, worked: worked, score: score}) AS members,
  collect(DISTINCT coalesce(e.task_key, e.id)) AS task_keys
RETURN signature, kind, size(members) AS tried,
  size([m IN members WHERE coalesce(m.f.recovered, false)]) AS recovered,
  size([m IN members WHERE m.worked]) AS worked,
  task_keys, [m IN members | m.f.run_id] AS runs,
  reduce(nearest = -1.0, m IN members | CASE WHEN m.score > nearest THEN m.score ELSE nearest END) AS nearest,
  {experience_id: members[0].e.id, problem: members[0].e.problem, goal: members[0].e.goal,
   domain: members[0].e.domain, failure_id: members[0].f.id, description: members[0].f.description,
   issue_type: members[0].f.issue_type, recovery: members[0].f.recovery, step_order: members[0].f.step_order,
   recovery_kind: members[0].f.recovery_kind, concrete: members[0].f.concrete, recovered: members[0].f.recovered,
   run_succeeded: members[0].f.run_succeeded, run_id: members[0].f.run_id, worked: members[0].worked,
   score: members[0].score} AS best;
