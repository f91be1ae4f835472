// Student search, scoring facts of candidate experiences $ids of namespace $kb, computed in the
// database so no embedding travels; text = what the full-text index holds (problem, goal, domain),
// for the lexical score over the candidates: Neo4j cosine scores ((1 + cos) / 2) of the problem+goal
// vector against $pg and of the workflow-shape vector against $task (only for experiences with
// steps). Cosines the vector channels already returned are not computed again: ids in
// $semantic_known / $structural_known get null there.
// Runs: an experience stands for its sources (source_ids), of which failed_source_ids failed; an
// abstract experience (a workflow) for its instances' runs. support = the runs that succeeded;
// remaining = the same without the runs in $exclude (a leave-one-out query's own record);
// runs_left = every run, successful or not, outside $exclude (an experience with none left
// stands only for excluded runs). workflow = the abstract experience of a concrete one's workflow
// ({id, weight, reason} of its ABSTRACTION edge), when it is one of $statuses.
// share = the successful runs (outside $exclude) of the candidate's task (experiences with its
// task_key) that took the candidate's way (the same operations), relative to the way that worked
// most often for that task; 1 when the way never worked or nothing is known. A way that hands the
// task to a human (an operation matching $handoff, see kbgraph.search.handoff) counts its
// successful runs at $handoff_credit; hands_off says whether the candidate's own way does.
// utility (Agent KB D.3, unclipped): quality decayed at $decay per day since the last use (or the
// creation), plus the usage impact decayed since it was last brought up to date.
// outcomes: [Neo4j cosine of the task an agent used it for against $pg, that outcome], from the
// task-conditioned feedback (Outcome nodes).
UNWIND $ids AS id
MATCH (e:Experience {kb: $kb, id: id})
CALL (e) {
  OPTIONAL MATCH (x:Experience {kb: $kb, task_key: e.task_key})
  WHERE e.kind = 'concrete' AND x.kind = 'concrete' AND x.status IN $statuses
  WITH e, x.operations AS way,
    sum(size([s IN coalesce(x.source_ids, []) WHERE NOT s IN coalesce(x.failed_source_ids, []) AND NOT s IN $exclude])
      * CASE WHEN any(op IN coalesce(x.operations, []) WHERE op =~ $handoff) THEN $handoff_credit ELSE 1.0 END)
      AS worked
  RETURN max(worked) AS most, sum(CASE WHEN way = e.operations THEN worked ELSE 0 END) AS way_worked
}
WITH e, CASE WHEN coalesce(most, 0) = 0 OR way_worked = 0 THEN 1.0 ELSE toFloat(way_worked) / most END AS share,
  COUNT { (e)-[:HAS_STEP]->() } AS steps,
  CASE WHEN e.kind = 'abstract' THEN COLLECT { MATCH (c:Experience {kb: $kb})-[:ABSTRACTION]->(e) RETURN c }
    ELSE [e] END AS members
WITH e, share, steps,
  reduce(acc = [], m IN members | acc + coalesce(m.source_ids, [])) AS sources,
  reduce(acc = [], m IN members | acc + coalesce(m.failed_source_ids, [])) AS failed
WITH e, share, steps, sources, [s IN sources WHERE NOT s IN failed] AS worked
RETURN e.id AS id, e.kind AS kind, e.domain AS domain, coalesce(e.scope, 'shared') AS scope,
  left(e.problem + '\n' + coalesce(e.goal, '') + '\n' + e.domain, 4000) AS text,
  coalesce(e.success_rate, 1.0) AS success_rate, coalesce(e.quality, 0.5) AS quality,
  size(worked) AS support, size(sources) AS runs, share,
  any(op IN coalesce(e.operations, []) WHERE op =~ $handoff) AS hands_off,
  CASE WHEN size($exclude) = 0 THEN size(worked) ELSE size([s IN worked WHERE NOT s IN $exclude]) END AS remaining,
  CASE WHEN size($exclude) = 0 THEN size(sources) ELSE size([s IN sources WHERE NOT s IN $exclude]) END AS runs_left,
  CASE WHEN e.kind = 'abstract' THEN null ELSE head(COLLECT {
    MATCH (e)-[r:ABSTRACTION]->(a:Experience {kb: $kb}) WHERE a.status IN $statuses
    WITH a, r ORDER BY a.id RETURN {id: a.id, weight: coalesce(r.weight, 1.0), reason: coalesce(r.reason, '')} }) END
    AS workflow,
  CASE WHEN NOT e.id IN $semantic_known THEN vector.similarity.cosine(e.pg_embedding, $pg) END AS semantic,
  CASE WHEN steps > 0 AND e.structure_embedding IS NOT NULL AND NOT e.id IN $structural_known
    THEN vector.similarity.cosine(e.structure_embedding, $task) END AS structural,
  steps,
  coalesce(e.quality, 0.5)
    * exp(-$decay * duration.inSeconds(coalesce(e.last_used_at, e.created_at, datetime()), datetime()).seconds / 86400.0)
  + coalesce(e.usage_impact, 0.0)
    * exp(-$decay * duration.inSeconds(coalesce(e.usage_impact_at, datetime()), datetime()).seconds / 86400.0) AS utility,
  [(e)-[:HAD_OUTCOME]->(o:Outcome) | [vector.similarity.cosine(o.embedding, $pg), o.outcome]] AS outcomes;
