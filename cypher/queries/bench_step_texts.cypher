// Search benchmark: how many distinct step texts (`action: text`, what is embedded) namespace $kb
// holds — the size of the step index if it kept one vector per distinct step text instead of one
// per step (issue 53).
MATCH (s:Step {kb: $kb})
RETURN count(DISTINCT s.action + ': ' + coalesce(s.text, '')) AS step_texts;
