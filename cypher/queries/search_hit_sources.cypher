// The runs each experience in $ids (namespace $kb) stands for, split by outcome: `worked`, the
// runs that succeeded, and `failed`. An abstract experience stands for its instances' runs
// (most-supported instance first). Used by the evaluation, whose relevance judgements name runs:
// a failed run is never handed back as an example while a run that worked is on the list.
UNWIND $ids AS id
MATCH (e:Experience {kb: $kb, id: id})
WITH id, CASE WHEN e.kind = 'abstract'
    THEN COLLECT { MATCH (c:Experience {kb: $kb})-[:ABSTRACTION]->(e)
                   RETURN c ORDER BY size(coalesce(c.source_ids, [])) DESC, c.id }
    ELSE [e] END AS members
WITH id, reduce(acc = [], m IN members | acc + coalesce(m.source_ids, [])) AS sources,
  reduce(acc = [], m IN members | acc + coalesce(m.failed_source_ids, [])) AS failed
RETURN id, [s IN sources WHERE NOT s IN failed] AS worked, [s IN sources WHERE s IN failed] AS failed;
