// Student search, the step channel in the process, followed by the change feed
// (kbgraph.search.student.step_model): search_step_text_rows for the experiences $ids of namespace
// $kb only. `experiences`: the rows of those that are there now, as search_step_text_rows gives
// them; `texts`: [embedding, [ids]] of every step text their steps say, with those of $ids whose
// steps say it (each step's experience_id, as search_step_text_rows reads it, reached from its
// experience).
// The namespace's search version comes first (kbgraph.store.search_version).
OPTIONAL MATCH (state:KbState {kb: $kb})
WITH state.search_version AS version
CALL () {
  MATCH (e:Experience)
  USING INDEX SEEK e:Experience(kb, id)
  WHERE e.kb = $kb AND e.id IN $ids
  RETURN collect([e.id, e.kind, e.status, e.domain, coalesce(e.success_rate, 0.0), coalesce(e.scope, 'shared'),
    e.owner_agent]) AS experiences
}
CALL () {
  // The experiences first, then their steps: with the pattern in one MATCH, 2026.09 met the hint with a
  // seek by kb alone (CI, eb27b54).
  MATCH (e:Experience)
  USING INDEX SEEK e:Experience(kb, id)
  WHERE e.kb = $kb AND e.id IN $ids
  CALL (e) {
    MATCH (e)-[:HAS_STEP]->(step:Step)-[:SAYS]->(text:StepText)
    WHERE step.experience_id = e.id AND text.embedding IS NOT NULL
    RETURN DISTINCT text
  }
  WITH text, collect(DISTINCT e.id) AS ids
  RETURN collect([text.embedding, ids]) AS texts
}
RETURN version, experiences, texts;
