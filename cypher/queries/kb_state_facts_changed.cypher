// Experiences of namespace $kb were archived, restored, deleted, merged or imported outside a
// consolidation: a new facts version, so that no process links from what it remembers of them.
MATCH (s:KbState {kb: $kb})
SET s.facts_version = randomUUID()
RETURN s.facts_version AS facts_version;
