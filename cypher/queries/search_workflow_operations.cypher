// Student search, intent channel: what every workflow of namespace $kb changes and, with $history,
// the namespace's own history of requests, in one request.
// `rows`: one row per experience with steps that passes the filters ($statuses, $domains, $kinds,
// $min_success, $min_quality, scope / $agent, as in search_experience_texts) and stands for its
// workflow: an abstract experience, or a concrete one that has no workflow of its own (no
// ABSTRACTION edge out). Each is [id, domain, joined, operations]: its state-changing actions in
// order, as stored by the write path, each followed by $separator (one string: ~27,000 names at
// 10,000 experiences cost the client ~3x more to decode one by one), and the list itself only where
// a name holds $separator or is null (else null). kbgraph matches the request's asks with the
// operations' words (kbgraph.search.student.intent, workflow_operations). One row of lists, as
// search_experience_texts.
// `history`: [id, source_ids, problem, operations] of every concrete experience with steps that
// worked at least once (success_rate > 0), passes the filters ($statuses, $domains, scope /
// $agent) and is of the query's domain $domain (every domain when null). The query's own runs are
// left out by kbgraph, not here (kbgraph.search.student.intent_history: an experience whose id is
// excluded, or whose runs all are), so the rows are the same for every query of the domain;
// kbgraph counts which request words went with which operations
// (kbgraph.search.scoring.history_association).
// $ids: only those experiences are looked at (null: all of them), for the change feed
// (kbgraph.search.student.intent_follow).
// The namespace's search version comes first (kbgraph.store.search_version): the rows are read
// only when it is not $known (the version the caller read them with; `unchanged`, rows []), the
// history only with $history and when it is not $history_known (`history_unchanged`). `feedback`:
// the namespace's feedback version, as search_version_of reads it.
OPTIONAL MATCH (state:KbState {kb: $kb})
WITH state.search_version AS version,
  state.search_version + '|' + reduce(stripes = '', f IN COLLECT { MATCH (f:FeedbackStripe {kb: $kb}) RETURN f ORDER BY f.stripe }
    | stripes + toString(f.stripe) + ':' + f.version + ';') AS feedback
CALL (version) {
  // The namespace looked in: none when the version is the one sent (a filter on the version alone
  // is planned after the experiences are read; an index seek for a null key reads nothing). The
  // hint holds the seek: on a database of many namespaces the planner chose, now and then, a plan
  // that reads every namespace's experiences (2,685 db hits for a version it had been sent).
  WITH CASE WHEN version IS NOT NULL AND version = $known THEN null ELSE $kb END AS scanned
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
    AND e.operations IS NOT NULL
    AND ($domains IS NULL OR e.domain IN $domains)
    AND ($kinds IS NULL OR e.kind IN $kinds)
    AND coalesce(e.success_rate, 0.0) >= $min_success
    AND coalesce(e.quality, 0.0) >= $min_quality
    AND (coalesce(e.scope, 'shared') = 'shared' OR e.owner_agent = $agent)
    AND (e.kind = 'abstract' OR NOT EXISTS { (e)-[:ABSTRACTION]->() })
    AND (e.kind = 'abstract' OR EXISTS { (e)-[:HAS_STEP]->() })
  WITH e ORDER BY e.id
  RETURN collect([e.id, e.domain, reduce(joined = '', o IN e.operations | joined + o + $separator),
                  CASE WHEN any(o IN e.operations WHERE o IS NULL OR o CONTAINS $separator) THEN e.operations END]) AS rows
}
CALL (version) {
  WITH CASE WHEN NOT $history OR (version IS NOT NULL AND version = $history_known) THEN null ELSE $kb END AS scanned
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
  WITH e WHERE e.kind = 'concrete'
    AND e.status IN $statuses
    AND e.operations IS NOT NULL
    AND coalesce(e.success_rate, 0.0) > 0.0
    AND ($domains IS NULL OR e.domain IN $domains)
    AND ($domain IS NULL OR e.domain = $domain)
    AND (coalesce(e.scope, 'shared') = 'shared' OR e.owner_agent = $agent)
    AND EXISTS { (e)-[:HAS_STEP]->() }
  WITH e ORDER BY e.id
  RETURN collect([e.id, coalesce(e.source_ids, []), coalesce(e.problem, ''), e.operations]) AS history
}
RETURN version, feedback, coalesce(version = $known, false) AS unchanged, rows,
  coalesce($history AND version = $history_known, false) AS history_unchanged, history;
