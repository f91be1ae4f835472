// Student search, the in-process vector channels (kbgraph.search.student.vector_model): every
// experience of namespace $kb with what the vector channels filter on ([id, kind, status, domain,
// success_rate, scope, owner_agent]), no vectors (asking whether one is there reads it: 1.1 s
// instead of ~0.2 s at 10,000 experiences). The namespace's search version comes first
// (kbgraph.store.search_version): the rows are read only when it is not $known (the version the caller kept its rows with; `unchanged`, rows []),
// as search_workflow_operations and search_experience_texts do. Quality is not read: feedback changes
// it without a new version, so a search with a quality floor does not use these rows.
OPTIONAL MATCH (state:KbState {kb: $kb})
WITH state.search_version AS version
CALL (version) {
  // None read when the version is the one sent (an index seek for a null key reads nothing).
  WITH CASE WHEN version IS NOT NULL AND version = $known THEN null ELSE $kb END AS scanned
  MATCH (e:Experience {kb: scanned})
  RETURN collect([e.id, e.kind, e.status, e.domain, coalesce(e.success_rate, 0.0), coalesce(e.scope, 'shared'),
    e.owner_agent]) AS rows
}
RETURN version, version IS NOT NULL AND version = $known AS unchanged, rows;
