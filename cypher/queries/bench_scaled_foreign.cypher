// kbgraph bench: experiences of namespace $kb that no scaled build wrote as they are: provenance
// other than one "synthetic-<n>" (a run added to the namespace, an experience merged from several
// by a consolidation), counted up to $cap, with a few ids.
MATCH (e:Experience {kb: $kb})
WHERE size(coalesce(e.source_ids, [])) <> 1 OR NOT e.source_ids[0] STARTS WITH 'synthetic-'
WITH e LIMIT $cap
RETURN count(e) AS foreign, collect(e.id)[..3] AS examples;
