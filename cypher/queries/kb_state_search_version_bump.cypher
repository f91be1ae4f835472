// A write that can change what a search reads of namespace $kb as a whole (its workflows'
// operations, its experiences' texts) gives the namespace a new search version, in the write's own
// transaction (kbgraph.store.search_version): a search reuses what it made of an earlier read only
// while the version it reads is the one it read then. A token, never a count: a namespace deleted
// and written again never repeats one.
// The change feed: `change_versions` holds the namespace's last 32 versions in order; `change_ids`
// the experiences the transaction that made each one changed (ids joined by a separator, '*' for
// "cannot say"), but for the last version, whose entry is `change_pending`, written by
// search_change_note just before the transaction commits (kbgraph.store.change_feed). A search that
// kept rows at an older version reads again only those experiences (search_changes_since). The new
// version's entry starts as '*': a transaction that commits without its note (an auto-commit
// statement, a caller's own transaction) cannot say. When the version before it is not the list's
// last (the list is new, or an import renewed the version) the list starts again from it, with
// nothing to tell of how it was reached.
MERGE (s:KbState {kb: $kb})
ON CREATE SET s.added_total = 0
WITH s, s.search_version AS before, coalesce(s.change_versions, []) AS versions,
  coalesce(s.change_ids, []) + [coalesce(s.change_pending, '*')] AS entries
WITH s, CASE WHEN before IS NOT NULL AND size(versions) > 0 AND last(versions) = before
  THEN [versions, entries] ELSE [[coalesce(before, '')], ['*']] END AS chain
SET s.search_version = randomUUID()
SET s.change_versions = (chain[0] + [s.search_version])[-32..], s.change_ids = chain[1][-31..],
    s.change_pending = '*'
RETURN s.search_version AS search_version;
