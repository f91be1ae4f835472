// Student search, search_hits_get for a caller that kept some of the rows (at least one of $kept).
// Rows the caller kept (kbgraph.search.student.kept_hits) are not read again when nothing they show
// changed since: $known lists the feedback versions they were read at, $kept names them, [id, the
// position of its version in $known, the ids its row shows besides its own: relation targets, its
// workflow]. Such a row comes back as {id} with `kept` true when the change feed
// (search_changes_since) tells what the writes since its version changed, the feedback stripes are
// the ones of that version (feedback names no ids), and none of those ids, nor the workflows of
// those, is the experience or one its row shows (a workflow's row counts its instances' runs). Else
// it is read.
// Its lists come padded to two elements or more with '' ($ids, $known) and ['', -1, []] ($kept),
// which name no experience and no version: one plan for every list size (kbgraph.store.plan_shape).
OPTIONAL MATCH (state:KbState {kb: $kb})
WITH state, state.search_version AS search,
  state.search_version + '|' + reduce(stripes = '', f IN COLLECT { MATCH (f:FeedbackStripe {kb: $kb}) RETURN f ORDER BY f.stripe }
    | stripes + toString(f.stripe) + ':' + f.version + ';') AS version
WITH search, version, coalesce(state.change_versions, []) AS versions,
  coalesce(state.change_ids, []) + [coalesce(state.change_pending, '*')] AS entries
// The feed's entries since each version of $known, as search_changes_since slices them (null: it
// cannot tell, or feedback was written since).
WITH version, [known IN coalesce($known, []) |
  CASE WHEN version IS NULL OR substring(known, size(split(known, '|')[0])) <> substring(version, size(search)) THEN null
    WHEN split(known, '|')[0] = search THEN []
    WHEN last(versions) <> search THEN null
    ELSE [i IN range(0, size(versions) - 1) WHERE versions[i] = split(known, '|')[0] | entries[i + 1..]][0] END] AS slices
WITH version, [slice IN slices |
  CASE WHEN slice IS NULL OR any(entry IN slice WHERE entry = '*') THEN null
    ELSE reduce(changed = [], entry IN slice | changed + [i IN split(entry, $separator) WHERE i <> '']) END] AS since
// The experiences each slice's writes touched: those they changed, and the workflows of those (a
// workflow's row counts its instances' runs). Worked out once, from the changed experiences (a
// pattern checked for every row walked every instance of a hit's workflow again, each search).
WITH version, since, reduce(every = [], changed IN since | every + coalesce(changed, [])) AS every
CALL (every) {
  MATCH (c:Experience)
  USING INDEX SEEK c:Experience(kb, id)
  WHERE c.kb = $kb AND c.id IN every
  MATCH (c)-[:ABSTRACTION]->(w:Experience)
  RETURN collect([c.id, w.id]) AS raised
}
WITH version, [changed IN since | CASE WHEN changed IS NULL THEN null
  ELSE changed + [pair IN raised WHERE pair[0] IN changed | pair[1]] END] AS touched
// The ids as one list under a hinted (kb, id) seek: unwound, they let the planner seek the namespace
// by kb and join the ids on.
MATCH (e:Experience)
USING INDEX SEEK e:Experience(kb, id)
WHERE e.kb = $kb AND e.id IN $ids
WITH version, e, [k IN coalesce($kept, []) WHERE k[0] = e.id][0] AS held, touched
WITH version, e, held, CASE WHEN held IS NULL THEN null ELSE touched[held[1]] END AS changed
// Its relations and workflow as kept are in held[2]: an edge written since names its source (and
// target), a target deleted is named, a workflow grown or shrunk too.
WITH version, e, changed IS NOT NULL AND NOT (e.id IN changed OR any(i IN held[2] WHERE i IN changed)) AS kept
CALL (e, kept) {
  OPTIONAL MATCH (e)-[:HAS_STEP]->(s:Step)
  WHERE NOT kept
  WITH s ORDER BY s.order
  RETURN collect(s {.*, embedding: null, observation: null}) AS steps
}
CALL (e, kept) {
  OPTIONAL MATCH (e)-[:HAS_FAILURE]->(f:FailureMode)
  WHERE NOT kept
  WITH f ORDER BY f.step_order, f.id
  RETURN collect(f {.*, embedding: null}) AS failure_modes
}
CALL (e, kept) {
  OPTIONAL MATCH (e)-[r:ABSTRACTION|COMPOSITION|ADAPTATION|ALTERNATIVE]->(t:Experience {kb: $kb})
  WHERE NOT kept
  WITH r, t ORDER BY type(r), t.id
  RETURN collect(CASE WHEN r IS NULL THEN NULL
    ELSE {type: type(r), target_id: t.id, weight: r.weight, reason: r.reason} END) AS relations
}
CALL (e, kept) {
  OPTIONAL MATCH (e)-[:ABSTRACTION]->(a:Experience {kb: $kb})
  WHERE NOT kept
  WITH e, a, kept ORDER BY a.id LIMIT 1
  WITH CASE WHEN kept THEN null WHEN e.kind = 'abstract' THEN e ELSE a END AS w
  OPTIONAL MATCH (c:Experience {kb: $kb})-[:ABSTRACTION]->(w)
  WITH w, sum(size(coalesce(c.source_ids, []))) AS runs, sum(size(coalesce(c.failed_source_ids, []))) AS failed,
    count(DISTINCT c.problem) AS tasks, count(c) AS instances
  RETURN CASE WHEN w IS NULL OR instances = 0 THEN null
    ELSE {id: w.id, runs: runs, failed: failed, tasks: tasks} END AS workflow
}
RETURN version, kept,
  CASE WHEN kept THEN {id: e.id} ELSE e {.*, pg_embedding: null, structure_embedding: null, context_embedding: null,
    pg_embedding_bytes: null, structure_embedding_bytes: null} END AS experience,
  steps, failure_modes, relations, workflow;
