// Student search, the returned experiences $ids of namespace $kb in full (steps in order,
// failure modes, outgoing relations) but without their embeddings and the tools' observations,
// which a caller reading results does not need (kbgraph get shows them); with how often the experience's workflow worked: the runs of every
// instance of its abstract experience (or of its own instances, for an abstract one), the failed
// ones among them, and the distinct tasks (problems).
// `version`, read first: the namespace's feedback version, as search_version_of reads it (the rows
// are kept under it: kbgraph.search.student.kept_hits). A caller that kept some of them reads
// search_hits_get_since (one query for both was planned, for empty lists of what was kept, at 22-46 ms
// of the server a read at 10,000 experiences, against ~1 ms).
// Its id lists come padded to two elements or more with '', which no id equals: one plan for every
// list size (kbgraph.store.plan_shape).
OPTIONAL MATCH (state:KbState {kb: $kb})
WITH state.search_version + '|' + reduce(stripes = '', f IN COLLECT { MATCH (f:FeedbackStripe {kb: $kb}) RETURN f ORDER BY f.stripe }
    | stripes + toString(f.stripe) + ':' + f.version + ';') AS version
UNWIND $ids AS id
MATCH (e:Experience {kb: $kb, id: id})
CALL (e) {
  OPTIONAL MATCH (e)-[:HAS_STEP]->(s:Step)
  WITH s ORDER BY s.order
  RETURN collect(s {.*, embedding: null, observation: null}) AS steps
}
CALL (e) {
  OPTIONAL MATCH (e)-[:HAS_FAILURE]->(f:FailureMode)
  WITH f ORDER BY f.step_order, f.id
  RETURN collect(f {.*, embedding: null}) AS failure_modes
}
CALL (e) {
  OPTIONAL MATCH (e)-[r:ABSTRACTION|COMPOSITION|ADAPTATION|ALTERNATIVE]->(t:Experience {kb: $kb})
  WITH r, t ORDER BY type(r), t.id
  RETURN collect(CASE WHEN r IS NULL THEN NULL
    ELSE {type: type(r), target_id: t.id, weight: r.weight, reason: r.reason} END) AS relations
}
CALL (e) {
  OPTIONAL MATCH (e)-[:ABSTRACTION]->(a:Experience {kb: $kb})
  WITH e, a ORDER BY a.id LIMIT 1
  WITH CASE WHEN e.kind = 'abstract' THEN e ELSE a END AS w
  OPTIONAL MATCH (c:Experience {kb: $kb})-[:ABSTRACTION]->(w)
  WITH w, sum(size(coalesce(c.source_ids, []))) AS runs, sum(size(coalesce(c.failed_source_ids, []))) AS failed,
    count(DISTINCT c.problem) AS tasks, count(c) AS instances
  RETURN CASE WHEN w IS NULL OR instances = 0 THEN null
    ELSE {id: w.id, runs: runs, failed: failed, tasks: tasks} END AS workflow
}
RETURN version, e {.*, pg_embedding: null, structure_embedding: null, context_embedding: null,
    pg_embedding_bytes: null, structure_embedding_bytes: null} AS experience,
  steps, failure_modes, relations, workflow;
