// Student search, the step channel in the process (kbgraph.search.student.step_model): every step
// text of namespace $kb (StepText) with its vector and the ids of the experiences whose steps say
// it (each step's experience_id, as search_step_vectors reads it: 2.4 s at 100,000 experiences
// where walking HAS_STEP back took 4.6; an id of no experience of $kb is dropped in the process)
// as `texts` ([embedding, [ids]] each), and every experience of $kb with what the channel filters
// on as `experiences` (the rows of search_experience_vector_rows), read together so that both are
// of one moment.
// The namespace's search version comes first (kbgraph.store.search_version): when it is $known,
// the version the caller kept its rows with, nothing is read (`unchanged`, empty lists).
OPTIONAL MATCH (state:KbState {kb: $kb})
WITH state.search_version AS version
CALL (version) {
  WITH CASE WHEN version IS NOT NULL AND version = $known THEN null ELSE $kb END AS scanned
  CALL (scanned) {
    MATCH (text:StepText {kb: scanned})
    WHERE text.embedding IS NOT NULL
    RETURN collect([text.embedding, COLLECT {
      MATCH (text)<-[:SAYS]-(step:Step) RETURN DISTINCT step.experience_id }]) AS texts
  }
  CALL (scanned) {
    MATCH (e:Experience {kb: scanned})
    USING INDEX SEEK e:Experience(kb)
    RETURN collect([e.id, e.kind, e.status, e.domain, coalesce(e.success_rate, 0.0), coalesce(e.scope, 'shared'),
      e.owner_agent]) AS experiences
  }
  RETURN texts, experiences
}
RETURN version, coalesce(version = $known, false) AS unchanged, texts, experiences;
