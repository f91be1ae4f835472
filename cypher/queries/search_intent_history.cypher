// Student search, intent channel: the namespace's own history of requests and what they changed.
// One row of lists: [problem, operations] of every concrete experience of namespace $kb with steps
// that worked at least once (success_rate > 0), passes the filters ($statuses, $domains, scope /
// $agent, as in search_workflow_operations), is of the query's domain $domain (every domain when
// null), and stands for at least one run outside $exclude (and is not itself excluded), so a query
// never learns from its own runs. kbgraph counts which request words went with which operations
// (kbgraph.search.scoring.history_association).
MATCH (e:Experience {kb: $kb})
WHERE e.kind = 'concrete'
  AND e.status IN $statuses
  AND e.operations IS NOT NULL
  AND coalesce(e.success_rate, 0.0) > 0.0
  AND ($domains IS NULL OR e.domain IN $domains)
  AND ($domain IS NULL OR e.domain = $domain)
  AND (coalesce(e.scope, 'shared') = 'shared' OR e.owner_agent = $agent)
  AND NOT e.id IN $exclude
  AND (size(coalesce(e.source_ids, [])) = 0 OR any(s IN e.source_ids WHERE NOT s IN $exclude))
  AND EXISTS { (e)-[:HAS_STEP]->() }
WITH e ORDER BY e.id
RETURN collect([coalesce(e.problem, ''), e.operations]) AS rows;
