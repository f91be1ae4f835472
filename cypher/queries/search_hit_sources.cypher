// The trajectories each experience in $ids (namespace $kb) stands for: its source ids, or for an
// abstract experience the source ids of its instances (most-supported instance first). Used by
// the evaluation, whose relevance judgements name trajectories.
UNWIND $ids AS id
MATCH (e:Experience {kb: $kb, id: id})
RETURN id,
  CASE WHEN e.kind = 'abstract'
    THEN reduce(acc = [], c IN COLLECT { MATCH (c:Experience {kb: $kb})-[:ABSTRACTION]->(e)
                                         RETURN c ORDER BY size(coalesce(c.source_ids, [])) DESC, c.id }
                | acc + coalesce(c.source_ids, []))
    ELSE coalesce(e.source_ids, []) END AS sources;
