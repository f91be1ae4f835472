// A write that can change what a search reads of namespace $kb as a whole (its workflows'
// operations, its experiences' texts) gives the namespace a new search version, in the write's own
// transaction (kbgraph.store.search_version): a search reuses what it made of an earlier read only
// while the version it reads is the one it read then. A token, never a count: a namespace deleted
// and written again never repeats one.
MERGE (s:KbState {kb: $kb})
ON CREATE SET s.added_total = 0
SET s.search_version = randomUUID()
RETURN s.search_version AS search_version;
