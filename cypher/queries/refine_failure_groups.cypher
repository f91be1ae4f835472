// Teacher phase: identical failure modes as one group, counted per kind of recovery. For each
// error signature in $signatures (the same error on the same action, values masked) and each
// recovery kind (retry, repeat, switch, none) its failure modes were followed by, over namespace
// $kb's active experiences within the caller's scope and $domains, leaving out $exclude_runs:
// how often it was tried, how often the fix went through, how often it went through and the run
// then succeeded (`worked`), the tasks and runs it comes from, the nearest member's cosine score
// to $vector (normalised as the index's, (1 + cos) / 2), and every member (what its run did next,
// as its record says, whether the call went through, whether the run then reached its goal): the caller counts the
// error class's runs from them and chooses the member to show. Members are listed from a run that
// then succeeded first, then a concrete recovery (it names what to do), then one that went
// through, the nearest to $vector breaking ties.
UNWIND $signatures AS signature
MATCH (f:FailureMode {kb: $kb, signature: signature})<-[:HAS_FAILURE]-(e:Experience {kb: $kb})
WHERE e.status = 'active' AND NOT coalesce(f.run_id, '') IN $exclude_runs
  AND ($domains IS NULL OR toLower(e.domain) IN $domains)
  AND (coalesce(e.scope, 'shared') = 'shared' OR e.owner_agent = $agent)
WITH signature, coalesce(f.recovery_kind, 'none') AS kind, f, e,
  coalesce(f.recovered, false) AND coalesce(f.run_succeeded, false) AS worked,
  vector.similarity.cosine(f.embedding, $vector) AS score
ORDER BY signature, kind, coalesce(f.run_succeeded, false) DESC, coalesce(f.concrete, false) DESC, worked DESC,
  score DESC, f.id
WITH signature, kind, collect({f: f, e: e, worked: worked, score: score}) AS members,
  collect(DISTINCT coalesce(e.task_key, e.id)) AS task_keys,
  min(f.signature_action) AS signature_action, min(f.signature_error) AS signature_error
RETURN signature, signature_action, signature_error, kind, size(members) AS tried,
  size([m IN members WHERE coalesce(m.f.recovered, false)]) AS recovered,
  size([m IN members WHERE m.worked]) AS worked,
  task_keys, [m IN members | m.f.run_id] AS runs,
  reduce(nearest = -1.0, m IN members | CASE WHEN m.score > nearest THEN m.score ELSE nearest END) AS nearest,
  [m IN members |
   {experience_id: m.e.id, problem: m.e.problem, goal: m.e.goal, domain: m.e.domain, failure_id: m.f.id,
    description: m.f.description, issue_type: m.f.issue_type, recovery: m.f.recovery, step_order: m.f.step_order,
    recovery_kind: m.f.recovery_kind, record: m.f.record, looked_up: m.f.looked_up, concrete: m.f.concrete,
    recovered: m.f.recovered, run_succeeded: m.f.run_succeeded, run_id: m.f.run_id, worked: m.worked,
    score: m.score}] AS members;
