// Student search, scoring facts of candidate experiences $ids of namespace $kb, computed in the
// database so no embedding travels; one row: `rows`, one map per candidate found and per workflow
// of a concrete candidate, and `ways`.
// text = what the full-text index holds (problem, goal, domain), for the lexical score over the
// candidates: Neo4j cosine scores ((1 + cos) / 2) of the problem+goal vector against $pg and of the
// workflow-shape vector against $task (only for experiences with steps). Cosines the vector
// channels already returned are not computed again: ids in $semantic_known / $structural_known
// get null there.
// Runs: an experience stands for its sources (source_ids), of which failed_source_ids failed; an
// abstract experience (a workflow) for its instances' runs. support = the runs that succeeded;
// remaining = the same without the runs in $exclude (a leave-one-out query's own record);
// runs_left = every run, successful or not, outside $exclude (an experience with none left
// stands only for excluded runs). workflow = the abstract experience of a concrete one's workflow
// ({id, weight, reason} of its ABSTRACTION edge), when it is one of $statuses.
// ways: once per task among the concrete candidates (their task_key), [task_key, operations,
// successful runs outside $exclude] of each way its concrete experiences of $statuses took;
// kbgraph.search.task_ways turns them into each candidate's share (and discounts the ways that
// hand the task to a human, read from the operations by kbgraph.search.handoff).
// utility (Agent KB D.3, unclipped; kbgraph.core.utility.utility clips it): quality decayed at $decay
// per calendar day (UTC) since the last use (or the creation) up to today, plus the usage impact
// decayed since it was last brought up to date; a time in the future (clock skew) counts as 0 days.
// today: $today (a date: the evaluation searches a namespace as of the day it was built), or the
// server's current UTC date when $today is null (every other search). Whole days
// (kbgraph.core.utility.calendar_days_between): by the second, experiences stored a second apart
// would differ in the seventh decimal, and equal hits would swap places from one search to the
// next. The same in
// search_neighbours; tests/search/scoring/test_utility_in_cypher.py pins both to the Python.
// outcomes: [Neo4j cosine of the task an agent used it for against $pg, that outcome], from the
// task-conditioned feedback (Outcome nodes).
// Its id lists come padded to two elements or more with '', which no id equals: one plan for every
// list size (kbgraph.store.plan_shape).
UNWIND $ids AS id
MATCH (e:Experience {kb: $kb, id: id})
WITH collect(e) AS asked
// The workflows of concrete candidates (abstract experiences of $statuses they are instances of)
// come along, so scoring them needs no second request.
CALL (asked) {
  UNWIND asked AS e
  MATCH (e)-[:ABSTRACTION]->(a:Experience {kb: $kb})
  WHERE e.kind <> 'abstract' AND a.status IN $statuses AND NOT a IN asked
  RETURN collect(DISTINCT a) AS workflows
}
WITH asked + workflows AS found
CALL (found) {
  UNWIND [c IN found WHERE c.kind = 'concrete' | c.task_key] AS task_key
  WITH DISTINCT task_key WHERE task_key IS NOT NULL
  MATCH (x:Experience {kb: $kb, task_key: task_key})
  WHERE x.kind = 'concrete' AND x.status IN $statuses
  WITH task_key, x.operations AS way,
    sum(size([s IN coalesce(x.source_ids, []) WHERE NOT s IN coalesce(x.failed_source_ids, []) AND NOT s IN $exclude]))
      AS worked
  RETURN collect([task_key, way, worked]) AS ways
}
UNWIND found AS e
WITH ways, e, EXISTS { (e)-[:HAS_STEP]->() } AS has_steps,
  CASE WHEN e.kind = 'abstract' THEN COLLECT { MATCH (c:Experience {kb: $kb})-[:ABSTRACTION]->(e) RETURN c }
    ELSE [e] END AS members
WITH ways, e, has_steps, coalesce($today, date({timezone: 'Z'})) AS today,
  reduce(acc = [], m IN members | acc + coalesce(m.source_ids, [])) AS sources,
  reduce(acc = [], m IN members | acc + coalesce(m.failed_source_ids, [])) AS failed
// A time not recorded counts as today (0 days).
WITH ways, e, has_steps, sources, [s IN sources WHERE NOT s IN failed] AS worked,
  duration.inDays(date(datetime({datetime: coalesce(e.last_used_at, e.created_at, datetime({date: today, timezone: 'Z'})), timezone: 'Z'})), today).days AS idle,
  duration.inDays(date(datetime({datetime: coalesce(e.usage_impact_at, datetime({date: today, timezone: 'Z'})), timezone: 'Z'})), today).days AS since_impact
WITH ways, collect({id: e.id, kind: e.kind, domain: e.domain, scope: coalesce(e.scope, 'shared'),
  task_key: e.task_key, operations: e.operations,
  text: left(e.problem + '\n' + coalesce(e.goal, '') + '\n' + e.domain, 4000),
  success_rate: coalesce(e.success_rate, 1.0), quality: coalesce(e.quality, 0.5),
  support: size(worked), runs: size(sources),
  remaining: size([s IN worked WHERE NOT s IN $exclude]),
  runs_left: size([s IN sources WHERE NOT s IN $exclude]),
  workflow: CASE WHEN e.kind = 'abstract' THEN null ELSE head(COLLECT {
    MATCH (e)-[r:ABSTRACTION]->(a:Experience {kb: $kb}) WHERE a.status IN $statuses
    WITH a, r ORDER BY a.id RETURN {id: a.id, weight: coalesce(r.weight, 1.0), reason: coalesce(r.reason, '')} }) END,
  semantic: CASE WHEN NOT e.id IN $semantic_known THEN vector.similarity.cosine(e.pg_embedding, $pg) END,
  structural: CASE WHEN has_steps AND e.structure_embedding IS NOT NULL AND NOT e.id IN $structural_known
    THEN vector.similarity.cosine(e.structure_embedding, $task) END,
  has_steps: has_steps,
  utility: coalesce(e.quality, 0.5) * exp(-$decay * CASE WHEN idle > 0 THEN idle ELSE 0.0 END)
    + coalesce(e.usage_impact, 0.0) * exp(-$decay * CASE WHEN since_impact > 0 THEN since_impact ELSE 0.0 END),
  outcomes: [(e)-[:HAD_OUTCOME]->(o:Outcome) | [vector.similarity.cosine(o.embedding, $pg), o.outcome]]}) AS rows
RETURN ways, rows;
