// Student search, scoring facts of candidate experiences $ids of namespace $kb, computed in the
// database so no embedding travels: Neo4j cosine scores ((1 + cos) / 2) of the problem+goal
// vector against $pg and of the workflow-shape vector against $task (only for experiences with
// steps). support = the trajectories an experience stands for (its sources; for an abstract
// experience, its instances); remaining = the same without the trajectories in $exclude (a
// leave-one-out query's own record). Cosines the vector channels already returned are not
// computed again: ids in $semantic_known / $structural_known get null there.
// utility (Agent KB D.3, unclipped): quality decayed at $decay per day since the last use (or the
// creation), plus the usage impact decayed since it was last brought up to date.
// outcomes: [Neo4j cosine of the task an agent used it for against $pg, that outcome], from the
// task-conditioned feedback (Outcome nodes).
UNWIND $ids AS id
MATCH (e:Experience {kb: $kb, id: id})
WITH e, COUNT { (e)-[:HAS_STEP]->() } AS steps,
  CASE WHEN e.kind = 'abstract' THEN COUNT { ()-[:ABSTRACTION]->(e) } END AS instances
RETURN e.id AS id, e.kind AS kind, e.domain AS domain, coalesce(e.scope, 'shared') AS scope,
  coalesce(e.success_rate, 1.0) AS success_rate, coalesce(e.quality, 0.5) AS quality,
  coalesce(instances, size(coalesce(e.source_ids, []))) AS support,
  coalesce(instances, CASE WHEN size($exclude) = 0 THEN size(coalesce(e.source_ids, []))
    ELSE size([s IN coalesce(e.source_ids, []) WHERE NOT s IN $exclude]) END) AS remaining,
  CASE WHEN NOT e.id IN $semantic_known THEN vector.similarity.cosine(e.pg_embedding, $pg) END AS semantic,
  CASE WHEN steps > 0 AND e.structure_embedding IS NOT NULL AND NOT e.id IN $structural_known
    THEN vector.similarity.cosine(e.structure_embedding, $task) END AS structural,
  steps,
  coalesce(e.quality, 0.5)
    * exp(-$decay * duration.inSeconds(coalesce(e.last_used_at, e.created_at, datetime()), datetime()).seconds / 86400.0)
  + coalesce(e.usage_impact, 0.0)
    * exp(-$decay * duration.inSeconds(coalesce(e.usage_impact_at, datetime()), datetime()).seconds / 86400.0) AS utility,
  [(e)-[:HAD_OUTCOME]->(o:Outcome) | [vector.similarity.cosine(o.embedding, $pg), o.outcome]] AS outcomes;
