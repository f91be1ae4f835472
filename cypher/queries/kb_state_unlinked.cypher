// What changed in namespace $kb since its last consolidation: the facts version (a token every
// consolidation sets, and every writer that archives, restores, deletes or imports experiences
// changes) and the experiences written since, marked `unlinked` by experience_upsert, with their
// stamps (a mark written again meanwhile has another stamp and stays). The experience_kb_unlinked
// index finds the marked ones without reading the others. `facts_log`: what the last incremental
// consolidations changed (ingest/link_state/_log.py), for a process whose state is behind.
OPTIONAL MATCH (s:KbState {kb: $kb})
CALL () {
  MATCH (e:Experience {kb: $kb})
  WHERE e.unlinked IS NOT NULL
  RETURN collect({id: e.id, stamp: e.unlinked}) AS marks
}
RETURN s.facts_version AS facts_version, coalesce(s.facts_log, []) AS facts_log, marks;
