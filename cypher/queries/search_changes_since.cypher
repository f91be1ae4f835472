// The change feed (kbgraph.store.search_version) read by a search that kept rows of namespace $kb
// at version $since: the namespace's search and feedback versions now and `changed`, the ids of
// the experiences the writes since $since changed (each noted with its ABSTRACTION neighbours,
// possibly more than once), or null when the feed cannot tell: $since is not among the last
// versions kept, the version now is not the feed's last (an import renewed it), or a write did not
// say what it changed. None when $since is the version now, whatever the feed holds (a namespace
// written before the feed existed, or last by an import, holds none): every write that changes
// what is searched gives a new version. Only those experiences' rows are then read again
// (kbgraph.search.student.versioned.KeptInBackground). With $inclusive, `changed` holds the ids of the
// write that made $since too: a whole read at $since may have seen part of that write's commit
// (it reads at read committed), and those rows are read again with the later ones.
OPTIONAL MATCH (state:KbState {kb: $kb})
WITH state, state.search_version AS version,
  state.search_version + '|' + reduce(stripes = '', f IN COLLECT { MATCH (f:FeedbackStripe {kb: $kb}) RETURN f ORDER BY f.stripe }
    | stripes + toString(f.stripe) + ':' + f.version + ';') AS feedback,
  coalesce(state.change_versions, []) AS versions,
  coalesce(state.change_ids, []) + [coalesce(state.change_pending, '*')] AS ids
WITH version, feedback, ids, versions, [i IN range(0, size(versions) - 1) WHERE versions[i] = $since] AS at
WITH version, feedback, CASE WHEN version = $since AND NOT $inclusive THEN []
  WHEN version IS NULL OR size(at) = 0 OR last(versions) <> version THEN null
  ELSE ids[at[0] + CASE WHEN $inclusive THEN 0 ELSE 1 END..] END AS entries
RETURN version, feedback,
  CASE WHEN entries IS NULL OR any(entry IN entries WHERE entry = '*') THEN null
    ELSE reduce(changed = [], entry IN entries | changed + [i IN split(entry, $separator) WHERE i <> '']) END AS changed;
