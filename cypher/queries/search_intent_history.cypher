// Student search, intent channel: the namespace's own history of requests and what they changed.
// One row of lists: [id, source_ids, problem, operations] of every concrete experience of namespace
// $kb with steps that worked at least once (success_rate > 0), passes the filters ($statuses,
// $domains, scope / $agent, as in search_workflow_operations) and is of the query's domain $domain
// (every domain when null). The query's own runs are left out by kbgraph, not here
// (kbgraph.search.student.intent_history: an experience whose id is excluded, or whose runs all
// are), so the rows are the same for every query of the domain and are kept with the search
// version; kbgraph counts which request words went with which operations
// (kbgraph.search.scoring.history_association).
// The namespace's search version comes first (kbgraph.store.search_version): when it is $known,
// the version the caller read its rows with, the rows are not read (`unchanged`, rows []).
OPTIONAL MATCH (state:KbState {kb: $kb})
WITH state.search_version AS version
CALL (version) {
  // The namespace looked in: none when the version is the one sent (as search_workflow_operations).
  WITH CASE WHEN version IS NOT NULL AND version = $known THEN null ELSE $kb END AS scanned
  MATCH (e:Experience {kb: scanned})
  WHERE e.kind = 'concrete'
    AND e.status IN $statuses
    AND e.operations IS NOT NULL
    AND coalesce(e.success_rate, 0.0) > 0.0
    AND ($domains IS NULL OR e.domain IN $domains)
    AND ($domain IS NULL OR e.domain = $domain)
    AND (coalesce(e.scope, 'shared') = 'shared' OR e.owner_agent = $agent)
    AND EXISTS { (e)-[:HAS_STEP]->() }
  WITH e ORDER BY e.id
  RETURN collect([e.id, coalesce(e.source_ids, []), coalesce(e.problem, ''), e.operations]) AS rows
}
RETURN version, coalesce(version = $known, false) AS unchanged, rows;
