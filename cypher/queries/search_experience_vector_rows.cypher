// Student search, the in-process vector channels (kbgraph.search.student.vector_model): every
// experience of namespace $kb with what the vector channels filter on ([id, kind, status, domain,
// success_rate, scope, owner_agent]), no vectors (asking whether one is there reads it: 1.1 s
// instead of ~0.2 s at 10,000 experiences). The filters are applied in the process, so the rows
// are the same for every search of the namespace. Quality is not read: feedback changes it without
// a new version, so a search with a quality floor does not use these rows.
// The namespace's search version comes first (kbgraph.store.search_version): when it is $known,
// the version the caller kept its rows with, the rows are not read (`unchanged`, rows []), as
// search_workflow_operations and search_experience_texts do.
OPTIONAL MATCH (state:KbState {kb: $kb})
WITH state.search_version AS version
CALL (version) {
  // The namespace looked in: none when the version is the one sent (an index seek for a null key
  // reads nothing). The hint holds the seek, as in search_experience_texts.
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
  WITH e ORDER BY e.id
  RETURN collect([e.id, e.kind, e.status, e.domain, coalesce(e.success_rate, 0.0), coalesce(e.scope, 'shared'),
    e.owner_agent]) AS rows
}
RETURN version, coalesce(version = $known, false) AS unchanged, rows;
