// The concrete experiences of namespace $kb whose provenance names trajectory $source_id (after
// merges, the experience that now stands for it).
MATCH (e:Experience {kb: $kb})
WHERE e.kind = 'concrete' AND $source_id IN coalesce(e.source_ids, [])
RETURN e.id AS id
ORDER BY id;
