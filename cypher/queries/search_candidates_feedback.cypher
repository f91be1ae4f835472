// Student search, the scoring facts of candidate experiences $ids of namespace $kb that the process
// does not keep (kbgraph.search.student.kept_facts): what feedback changes without a new search
// version (quality, utility, the task outcomes), the cosines against the query, and the text the
// lexical score reads (what the full-text index holds). One row:
// `rows`, one map per experience of $ids still stored. Each value is computed exactly as
// search_candidates_score computes it (see that file): the cosine of the problem+goal vector
// against $pg for the ids in $semantic_ids, of the workflow-shape vector against $task for the
// ids in $structural_ids (those with steps whose channels did not score them already).
// Its id lists come padded to two elements or more with '', which no id equals: one plan for every
// list size (kbgraph.store.plan_shape).
UNWIND $ids AS id
MATCH (e:Experience {kb: $kb, id: id})
WITH e, coalesce($today, date({timezone: 'Z'})) AS today
WITH e,
  duration.inDays(date(datetime({datetime: coalesce(e.last_used_at, e.created_at, datetime({date: today, timezone: 'Z'})), timezone: 'Z'})), today).days AS idle,
  duration.inDays(date(datetime({datetime: coalesce(e.usage_impact_at, datetime({date: today, timezone: 'Z'})), timezone: 'Z'})), today).days AS since_impact
RETURN collect({id: e.id, quality: coalesce(e.quality, 0.5),
  text: left(e.problem + '\n' + coalesce(e.goal, '') + '\n' + e.domain, 4000),
  semantic: CASE WHEN e.id IN $semantic_ids THEN vector.similarity.cosine(e.pg_embedding, $pg) END,
  structural: CASE WHEN e.id IN $structural_ids AND e.structure_embedding IS NOT NULL
    THEN vector.similarity.cosine(e.structure_embedding, $task) END,
  utility: coalesce(e.quality, 0.5) * exp(-$decay * CASE WHEN idle > 0 THEN idle ELSE 0.0 END)
    + coalesce(e.usage_impact, 0.0) * exp(-$decay * CASE WHEN since_impact > 0 THEN since_impact ELSE 0.0 END),
  outcomes: [(e)-[:HAD_OUTCOME]->(o:Outcome) | [vector.similarity.cosine(o.embedding, $pg), o.outcome]]}) AS rows;
