// Student search, the returned experiences $ids of namespace $kb in full (steps in order,
// failure modes, outgoing relations) but without their embeddings and the tools' observations,
// which a caller reading results does not need (kbgraph get shows them); with how often the experience's workflow worked: the runs of every
// instance of its abstract experience (or of its own instances, for an abstract one), the failed
// ones among them, and the distinct tasks (problems).
// `version`, read first: the namespace's feedback version, as search_version_of reads it (the rows
// are kept under it: kbgraph.search.student.kept_hits).
// Rows the caller kept (kbgraph.search.student.kept_hits) are not read again when nothing they show
// changed since: $known lists the feedback versions they were read at, $kept names them, [id, the
// position of its version in $known, the ids its row shows besides its own: relation targets, its
// workflow]. Such a row comes back as {id} with `kept` true when the change feed
// (search_changes_since) tells what the writes since its version changed, the feedback stripes are
// the ones of that version (feedback names no ids), and none of those ids is the experience, one
// its row shows or its workflow's instances (the runs it counts). Else it is read.
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
UNWIND $ids AS id
MATCH (e:Experience {kb: $kb, id: id})
WITH version, since, e, [k IN coalesce($kept, []) WHERE k[0] = e.id][0] AS held
WITH version, e, held, CASE WHEN held IS NULL THEN null ELSE since[held[1]] END AS changed
WITH version, e, changed IS NOT NULL AND NOT (e.id IN changed OR any(i IN held[2] WHERE i IN changed)
    OR EXISTS { (e)-[:ABSTRACTION|COMPOSITION|ADAPTATION|ALTERNATIVE]->(t:Experience) WHERE t.id IN changed }
    OR EXISTS { (e)-[:ABSTRACTION]->(:Experience)<-[:ABSTRACTION]-(c:Experience) WHERE c.id IN changed }
    OR EXISTS { (c:Experience)-[:ABSTRACTION]->(e) WHERE c.id IN changed }) AS kept
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
  CASE WHEN kept THEN {id: e.id} ELSE e {.*, pg_embedding: null, structure_embedding: null, context_embedding: null} END AS experience,
  steps, failure_modes, relations, workflow;
