// Teacher phase, exact scan of namespace $kb for a namespace small enough (see
// search_namespace_size): every step text (StepText) of $kb is scored by cosine against $vector
// (the same normalised score as the index) and the $first nearest go on exactly as in
// refine_step_vectors.cypher, whose filters and rows follow. Exact, and independent of what
// other namespaces hold.
MATCH (node:StepText {kb: $kb})
WHERE node.embedding IS NOT NULL
WITH node, vector.similarity.cosine(node.embedding, $vector) AS score
ORDER BY score DESC
LIMIT $first
WITH collect({text: node, score: score}) AS hits
CALL (hits) {
  UNWIND hits AS hit
  WITH hit.text AS text, hit.score AS score
  MATCH (s:Step)-[:SAYS]->(text)
  // The teacher scores a step by its text's score, its profile (action, argument schema, issue
  // type, error signature, resolution) and its experience's precision alone, and the score never
  // falls as the precision grows: of the runs whose steps say one text alike, only the $per_group
  // of highest precision (ties: experience id) can be among the $per_group best experiences, or,
  // where the rest of the score is 0, the $per_group first by id. Those two are all a group
  // returns, and a group reads its experiences in id order only until it has them: thousands of
  // runs saying one text cost their steps' properties, not their experiences. No top-$per_group
  // answer changes. $precision_floor and $missing_precision are the teacher's (RefineWeights),
  // as it computes the precision: 1 for a step with a resolution, else
  // floor + (1 - floor) * success rate.
  WITH text, score, s.action AS action, s.args_schema AS args_schema, s.issue_type AS issue_type,
       s.signature AS signature, s.resolution_effectiveness AS resolution,
       collect(coalesce(s.experience_id, '')) AS ids, collect(coalesce(s.order, -1)) AS orders
  // Each run once, by its earliest step of the group (its steps here score alike), in id order:
  // runs and orders only, the step itself found again for the runs kept (a text said by a million
  // steps held as maps of nodes went over the server's transaction memory). Never null, so that
  // the two lists stay aligned (collect drops nulls); '' is no experience's id.
  CALL (ids, orders) {
    UNWIND range(0, size(ids) - 1) AS i
    WITH ids[i] AS id, orders[i] AS order
    ORDER BY id, order
    WITH id, collect(order)[0] AS order
    ORDER BY id
    RETURN collect({id: id, order: order}) AS runs
  }
  WITH text, score, resolution, runs,
       CASE WHEN resolution IS NOT NULL THEN 1.0 ELSE $precision_floor + (1.0 - $precision_floor) END AS highest
  // The first $per_group by id that pass the filters...
  CALL (runs) {
    UNWIND runs AS candidate
    MATCH (e:Experience {kb: $kb, id: candidate.id})
    WHERE e.status = 'active'
      AND ($domains IS NULL OR toLower(e.domain) IN $domains)
      AND (coalesce(e.scope, 'shared') = 'shared' OR e.owner_agent = $agent)
      AND (size($exclude_runs) = 0 OR size(coalesce(e.source_ids, [])) = 0
           OR any(run IN e.source_ids WHERE NOT run IN $exclude_runs))
    WITH candidate, e
    LIMIT $per_group
    RETURN collect({experience: e, order: candidate.order}) AS first_by_id
  }
  // ...and the first $per_group by id of those with the highest precision a run can have: the
  // best $per_group when there are that many, else the best of every run that passes.
  CALL (runs, resolution, highest) {
    UNWIND runs AS candidate
    MATCH (e:Experience {kb: $kb, id: candidate.id})
    WHERE e.status = 'active'
      AND ($domains IS NULL OR toLower(e.domain) IN $domains)
      AND (coalesce(e.scope, 'shared') = 'shared' OR e.owner_agent = $agent)
      AND (size($exclude_runs) = 0 OR size(coalesce(e.source_ids, [])) = 0
           OR any(run IN e.source_ids WHERE NOT run IN $exclude_runs))
      AND CASE WHEN resolution IS NOT NULL THEN 1.0
              ELSE $precision_floor + (1.0 - $precision_floor) *
                   CASE WHEN (e.success_rate IS :: INTEGER OR e.success_rate IS :: FLOAT)
                             AND 0.0 <= e.success_rate <= 1.0
                        THEN toFloat(e.success_rate) ELSE $missing_precision END
         END = highest
    WITH candidate, e
    LIMIT $per_group
    RETURN collect({experience: e, order: candidate.order}) AS most_precise
  }
  CALL (runs, resolution, most_precise) {
    UNWIND CASE WHEN size(most_precise) < $per_group THEN runs ELSE [] END AS candidate
    MATCH (e:Experience {kb: $kb, id: candidate.id})
    WHERE e.status = 'active'
      AND ($domains IS NULL OR toLower(e.domain) IN $domains)
      AND (coalesce(e.scope, 'shared') = 'shared' OR e.owner_agent = $agent)
      AND (size($exclude_runs) = 0 OR size(coalesce(e.source_ids, [])) = 0
           OR any(run IN e.source_ids WHERE NOT run IN $exclude_runs))
    WITH candidate, e, CASE WHEN resolution IS NOT NULL THEN 1.0
              ELSE $precision_floor + (1.0 - $precision_floor) *
                   CASE WHEN (e.success_rate IS :: INTEGER OR e.success_rate IS :: FLOAT)
                             AND 0.0 <= e.success_rate <= 1.0
                        THEN toFloat(e.success_rate) ELSE $missing_precision END
         END AS precision
    ORDER BY precision DESC, candidate.id
    LIMIT $per_group
    RETURN collect({experience: e, order: candidate.order}) AS by_precision
  }
  UNWIND first_by_id + CASE WHEN size(most_precise) < $per_group THEN by_precision ELSE most_precise END AS member
  WITH DISTINCT member.experience AS e, member.order AS order, score
  MATCH (e)-[:HAS_STEP]->(s:Step)
  WHERE s.order = order
  WITH e, s, score, e.id AS id, order
  ORDER BY score DESC, id, order
  RETURN collect({
    experience_id: id, problem: e.problem, goal: e.goal, domain: e.domain,
    success_rate: e.success_rate, step_id: s.id, order: order, action: s.action, text: s.text,
    args_schema: s.args_schema, issue_type: s.issue_type,
    resolution_effectiveness: s.resolution_effectiveness, signature: s.signature, score: score
  }) AS rows
}
RETURN size(hits) AS fetched, rows;
