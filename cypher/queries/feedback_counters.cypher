// The learning state of experiences $ids (namespace $kb): counters, quality, usage impact, times.
UNWIND $ids AS id
MATCH (e:Experience {kb: $kb, id: id})
RETURN e.id AS id, coalesce(e.retrieved, 0) AS retrieved, coalesce(e.used, 0) AS used,
  coalesce(e.succeeded, 0) AS succeeded, coalesce(e.quality, 0.5) AS quality,
  coalesce(e.usage_impact, 0.0) AS usage_impact, e.usage_impact_at AS usage_impact_at,
  e.last_used_at AS last_used_at, e.created_at AS created_at, e.status AS status;
