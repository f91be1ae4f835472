// The change feed (kbgraph.store.search_version, kbgraph.store.change_feed): writes, on namespace
// $kb's state node, the entry of its last version (`change_pending`, '*' from the bump until now):
// the experiences the transaction changed, $ids, with $joined (those whose status, existence or
// edges it changed: a member's row carries its abstraction's status, and says whether it has one)
// and the experiences joined to them by an ABSTRACTION edge now (those joined before were read
// into $ids before each write), each once. Run once, just before the transaction commits. $ids
// null: the transaction cannot say what it changed, and a search that kept rows before this version
// reads them all again ('*'), as it does when an id holds $separator or the entry passes $max_chars.
MATCH (s:KbState {kb: $kb})
WITH s, CASE WHEN $ids IS NULL THEN null ELSE $ids + $joined + COLLECT {
  UNWIND $joined AS id
  MATCH (:Experience {kb: $kb, id: id})-[:ABSTRACTION]-(n:Experience)
  RETURN DISTINCT n.id
} END AS ids
WITH s, CASE WHEN ids IS NULL OR any(i IN ids WHERE i CONTAINS $separator OR i = '*') THEN '*'
  ELSE reduce(joined = '', i IN ids | CASE WHEN ($separator + joined) CONTAINS ($separator + i + $separator)
    THEN joined ELSE joined + i + $separator END) END AS noted
SET s.change_pending = CASE WHEN size(noted) > $max_chars THEN '*' ELSE noted END
RETURN size(s.change_pending) AS noted;
