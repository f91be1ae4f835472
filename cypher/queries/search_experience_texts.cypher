// Student search, lexical channel by exact scan: the texts the full-text index experience_text
// holds (problem, goal, domain) of every experience of namespace $kb that passes the filters
// ($statuses, $domains, $kinds, $min_success, $min_quality, scope / $agent, as in
// search_experience_fulltext), in id order, as one row (`rows`: [id, domain, problem, goal] each;
// one row of lists travels faster than a record per experience). kbgraph scores them with BM25 over the namespace's
// own texts (kbgraph.search.lexical.LexicalCorpus): the full-text index's top hits and its term
// statistics are the whole database's, crowded by other namespaces. Used for a namespace small
// enough to scan (search_namespace_size).
// The namespace's search version comes first (kbgraph.store.search_version): when it is $known,
// the version the caller read its rows with, the rows are not read (`unchanged`, rows []).
OPTIONAL MATCH (state:KbState {kb: $kb})
WITH state.search_version AS version
CALL (version) {
  // The namespace looked in: none when the version is the one sent (a filter on the version alone
  // is planned after the experiences are read; an index seek for a null key reads nothing). The
  // hint holds the seek: on a database of many namespaces the planner chose, now and then, a plan
  // that reads every namespace's experiences (2,685 db hits for a version it had been sent).
  WITH CASE WHEN version IS NOT NULL AND version = $known THEN null ELSE $kb END AS scanned
  // The experiences read: all of them, or with $ids only those (the change feed: the rows of the
  // experiences written since the version a process kept, kbgraph.store.search_version).
  CALL (scanned) {
    // The whole namespace only without $ids: a filter on $ids alone is planned after the seek
    // (every experience of $kb read and dropped, ~8,700 db hits at 10,000), a null key reads nothing.
    WITH CASE WHEN $ids IS NULL THEN scanned END AS whole
    MATCH (e:Experience {kb: whole})
    USING INDEX SEEK e:Experience(kb, status)
    WHERE e.status IN $statuses
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
  WITH e WHERE e.status IN $statuses
    AND ($domains IS NULL OR e.domain IN $domains)
    AND ($kinds IS NULL OR e.kind IN $kinds)
    AND coalesce(e.success_rate, 0.0) >= $min_success
    AND coalesce(e.quality, 0.0) >= $min_quality
    AND (coalesce(e.scope, 'shared') = 'shared' OR e.owner_agent = $agent)
  WITH e ORDER BY e.id
  RETURN collect([e.id, e.domain, coalesce(e.problem, ''), coalesce(e.goal, '')]) AS rows
}
RETURN version, coalesce(version = $known, false) AS unchanged, rows;
