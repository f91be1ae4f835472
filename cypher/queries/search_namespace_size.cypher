// Student search: how many experiences, step texts (the step vectors: StepText) and meta-concepts
// namespace $kb holds, each counted
// up to $cap (the count stops there, so asking costs the same in a namespace of any size). A
// namespace at or below the exact-scan size is searched by an exact scan instead of the shared
// vector indexes.
CALL (*) { MATCH (e:Experience {kb: $kb}) WITH e LIMIT $cap RETURN count(e) AS experiences }
CALL (*) { MATCH (s:StepText {kb: $kb}) WITH s LIMIT $cap RETURN count(s) AS steps }
CALL (*) { MATCH (m:MetaConcept {kb: $kb}) WITH m LIMIT $cap RETURN count(m) AS meta_concepts }
RETURN experiences, steps, meta_concepts;
