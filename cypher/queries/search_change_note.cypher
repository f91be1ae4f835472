// The change feed (kbgraph.store.search_version): notes on namespace $kb's state node, in the
// entry of its last version (`change_pending`), that the transaction's version changed
// experiences $ids, and $joined with those joined to them by an ABSTRACTION edge now (a write that
// changes an experience's status or existence, or its edges: a member's row carries its
// abstraction's status, and says whether it has one), each once. Run before a write that changes
// what is searched (for its $joined) and after it, so that members it joins and members it parts
// are both noted. $ids null: the write cannot say which it changed, and a search that kept rows
// before this version reads them all again ('*'), as it does when an id holds $separator or the
// entry grows past $max_chars.
MATCH (s:KbState {kb: $kb})
WITH s, CASE WHEN $ids IS NULL THEN null ELSE $ids + $joined + COLLECT {
  UNWIND $joined AS id
  MATCH (:Experience {kb: $kb, id: id})-[:ABSTRACTION]-(n:Experience)
  RETURN DISTINCT n.id
} END AS ids
WITH s, coalesce(s.change_pending, '*') AS entry, ids
WITH s, CASE WHEN ids IS NULL OR entry = '*' OR any(i IN ids WHERE i CONTAINS $separator OR i = '*')
  THEN '*' ELSE reduce(joined = entry, i IN ids | CASE WHEN ($separator + joined) CONTAINS ($separator + i + $separator)
    THEN joined ELSE joined + i + $separator END) END AS noted
SET s.change_pending = CASE WHEN size(noted) > $max_chars THEN '*' ELSE noted END
RETURN size(s.change_pending) AS noted;
