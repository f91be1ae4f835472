// Student search: the search version of namespace $kb (kbgraph.store.search_version), null when it
// has none yet. The full-text channel of a namespace above exact_scan_max ranks in the process when
// the corpus it keeps was read at this version (kbgraph.search.student.text_corpus): one index seek.
OPTIONAL MATCH (state:KbState {kb: $kb})
RETURN state.search_version AS version;
