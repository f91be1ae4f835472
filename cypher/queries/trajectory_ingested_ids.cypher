// Which of the trajectory ids $ids are already in the provenance (source_ids) of an experience
// of namespace $kb: such trajectories were ingested before (possibly merged) and are skipped.
MATCH (e:Experience {kb: $kb})
WHERE any(s IN e.source_ids WHERE s IN $ids)
UNWIND [s IN e.source_ids WHERE s IN $ids] AS id
RETURN collect(DISTINCT id) AS ids;
