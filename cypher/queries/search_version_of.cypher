// Student search: the search version of namespace $kb (kbgraph.store.search_version), null when it
// has none yet. The full-text channel of a namespace above exact_scan_max ranks in the process when
// the corpus it keeps was read at this version (kbgraph.search.student.text_corpus): one index seek.
// `feedback`: the namespace's feedback version, its search version and the token of each of its
// feedback stripes (kbgraph.store.search_version), as search_experience_feedback_rows reads it.
OPTIONAL MATCH (state:KbState {kb: $kb})
RETURN state.search_version AS version,
  state.search_version + '|' + reduce(stripes = '', f IN COLLECT { MATCH (f:FeedbackStripe {kb: $kb}) RETURN f ORDER BY f.stripe }
    | stripes + toString(f.stripe) + ':' + f.version + ';') AS feedback;
