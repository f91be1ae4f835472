// Search benchmark: how many distinct step texts (`action: text`, what is embedded) namespace $kb's
// steps say, and how many vectors its step index holds for it (StepText nodes: one per distinct
// text, issue 53; the two agree unless a step is left without its vector).
CALL (*) { MATCH (s:Step {kb: $kb}) RETURN count(DISTINCT s.action + ': ' + coalesce(s.text, '')) AS step_texts }
CALL (*) { MATCH (v:StepText {kb: $kb}) RETURN count(v) AS step_vectors }
RETURN step_texts, step_vectors;
