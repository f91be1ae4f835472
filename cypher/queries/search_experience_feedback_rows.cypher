// Student search, what feedback changes, kept in the process (kbgraph.search.student.kept_feedback):
// every experience of namespace $kb with what search_candidates_feedback computes its quality,
// utility and outcomes from, as one row of lists (`rows`): [id, quality, idle_from, usage_impact,
// impact_from, outcomes]. idle_from and impact_from are the days from 1970-01-01 to the UTC dates
// the utility's two decays count from (null: today, as that query's coalesce makes them), outcomes
// [outcome id, outcome] of each HAD_OUTCOME edge in the order search_candidates_feedback lists
// them (the outcomes' vectors: search_outcome_vectors_of). Values are coalesced as that query
// coalesces them.
// The namespace's feedback version comes first (its search version and each feedback stripe's token,
// kbgraph.store.search_version, as search_version_of reads it): when it is $known, the version the
// caller kept its rows with, the rows are not read (`unchanged`, rows []).
OPTIONAL MATCH (state:KbState {kb: $kb})
WITH state.search_version + '|' + reduce(stripes = '', f IN COLLECT { MATCH (f:FeedbackStripe {kb: $kb}) RETURN f ORDER BY f.stripe }
    | stripes + toString(f.stripe) + ':' + f.version + ';') AS version
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
  WITH e ORDER BY e.id
  WITH e, coalesce(e.last_used_at, e.created_at) AS idle_at
  RETURN collect([e.id, coalesce(e.quality, 0.5),
    CASE WHEN idle_at IS NOT NULL
      THEN duration.inDays(date('1970-01-01'), date(datetime({datetime: idle_at, timezone: 'Z'}))).days END,
    coalesce(e.usage_impact, 0.0),
    CASE WHEN e.usage_impact_at IS NOT NULL
      THEN duration.inDays(date('1970-01-01'), date(datetime({datetime: e.usage_impact_at, timezone: 'Z'}))).days END,
    [(e)-[:HAD_OUTCOME]->(o:Outcome) | [o.id, o.outcome]]]) AS rows
}
RETURN version, coalesce(version = $known, false) AS unchanged, rows;
