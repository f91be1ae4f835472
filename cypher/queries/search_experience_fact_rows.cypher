// Student search, the scoring facts kept in the process (kbgraph.search.student.kept_facts): every
// experience of namespace $kb with the facts of search_candidates_score that only a write which
// gives the namespace a new search version changes, as one row of lists (`rows`): [id, kind,
// status, domain, scope, task_key, operations, success_rate, source_ids, failed_source_ids,
// has_steps, abstractions, text], abstractions being [target id, target status, weight, reason] of
// each ABSTRACTION edge to an experience of the namespace, in target id order, text what the lexical
// score reads (as search_candidates_feedback reads it). Quality, utility, the task outcomes and the
// cosines against the query are not here: feedback changes the first three without a new search
// version (search_experience_feedback_rows keeps them by the feedback version), and the last
// depend on the query.
// Values are coalesced exactly as search_candidates_score coalesces them.
// The namespace's search version comes first (kbgraph.store.search_version): when it is $known,
// the version the caller kept its rows with, the rows are not read (`unchanged`, rows []), as
// search_experience_vector_rows does.
OPTIONAL MATCH (state:KbState {kb: $kb})
WITH state.search_version AS version
CALL (version) {
  WITH CASE WHEN version IS NOT NULL AND version = $known THEN null ELSE $kb END AS scanned
  // The experiences read: all of them, or with $ids only those (the change feed: the rows of the
  // experiences written since the version a process kept, kbgraph.store.search_version).
  CALL (scanned) {
    // The whole namespace only without $ids: a filter on $ids alone is planned after the seek
    // (every experience of $kb read and dropped, ~8,700 db hits at 10,000), a null key reads nothing.
    WITH CASE WHEN $ids IS NULL THEN scanned END AS whole
    MATCH (e:Experience {kb: whole})
    USING INDEX SEEK e:Experience(kb)
    RETURN e
    UNION
    // The seek by (kb, id) hinted and the ids as one list: with an UNWIND the planner could seek
    // the namespace by kb and join the ids on (CI, a Neo4j 5.26 and a 2026.09 run: 126 of 126).
    // Coalesced: a seek on a null list fails even where no row reaches it.
    WITH scanned WHERE $ids IS NOT NULL
    MATCH (e:Experience)
    USING INDEX SEEK e:Experience(kb, id)
    WHERE e.kb = scanned AND e.id IN coalesce($ids, [])
    RETURN e
  }
  WITH e, scanned ORDER BY e.id
  RETURN collect([e.id, e.kind, e.status, e.domain, coalesce(e.scope, 'shared'), e.task_key, e.operations,
    coalesce(e.success_rate, 1.0),
    coalesce(e.source_ids, []), coalesce(e.failed_source_ids, []), EXISTS { (e)-[:HAS_STEP]->() },
    // Walked from e: with the label and kb on `a` as a pattern, 2026.09 planned now and then a seek of
    // every experience of the namespace for each row (CI, 6c7c7b7); an ABSTRACTION edge ends at an experience.
    COLLECT { MATCH (e)-[r:ABSTRACTION]->(a) WHERE a.kb = scanned AND 'Experience' IN labels(a) WITH a, r ORDER BY a.id
      RETURN [a.id, a.status, coalesce(r.weight, 1.0), coalesce(r.reason, '')] },
    left(e.problem + '\n' + coalesce(e.goal, '') + '\n' + e.domain, 4000)]) AS rows
}
RETURN version, coalesce(version = $known, false) AS unchanged, rows;
