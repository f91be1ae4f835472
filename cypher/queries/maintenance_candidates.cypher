// Maintenance: every active experience of namespace $kb with what merging compares (kind, workflow,
// problem+goal vector, owner) and what pruning scores (counters, quality, usage impact, and the
// times its utility decays from: last use or creation, and the usage impact's last update). The
// vector as its bytes (kbgraph.store.vector_cache.VECTOR_BYTES), or as its list of floats for an
// experience stored before those were kept.
MATCH (e:Experience {kb: $kb})
WHERE e.status = 'active'
RETURN e.id AS id, e.kind AS kind, e.domain AS domain, coalesce(e.actions, []) AS actions,
  e.pg_embedding_bytes AS pg_embedding_bytes,
  CASE WHEN e.pg_embedding_bytes IS NULL THEN e.pg_embedding END AS pg_embedding, e.success_rate AS success_rate, e.source AS source,
  e.source_ids AS source_ids, coalesce(e.failed_source_ids, []) AS failed_source_ids,
  coalesce(e.adapted_from, []) AS adapted_from,
  coalesce(e.retrieved, 0) AS retrieved, coalesce(e.used, 0) AS used, coalesce(e.succeeded, 0) AS succeeded,
  e.problem AS problem, e.goal AS goal, e.scope AS scope, e.owner_agent AS owner_agent,
  coalesce(e.quality, 0.5) AS quality, coalesce(e.usage_impact, 0.0) AS usage_impact,
  e.last_used_at AS last_used_at, e.created_at AS created_at, e.usage_impact_at AS usage_impact_at
ORDER BY id;
