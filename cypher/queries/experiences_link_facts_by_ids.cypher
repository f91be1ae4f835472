// experiences_link_facts for the experiences $ids of namespace $kb (the active ones), without the
// problem+goal vectors: those never change for an id (ids are content hashes), so the pipeline
// keeps them in memory and asks experience_pg_vectors only for ids it has not seen.
UNWIND $ids AS id
MATCH (e:Experience {kb: $kb, id: id})
WHERE e.status = 'active'
RETURN e.id AS id, e.kind AS kind, e.domain AS domain, coalesce(e.actions, []) AS actions,
       e.success_rate AS success_rate, e.source AS source,
       e.source_ids AS source_ids, coalesce(e.failed_source_ids, []) AS failed_source_ids, coalesce(e.adapted_from, []) AS adapted_from,
       e.retrieved AS retrieved, e.used AS used, e.succeeded AS succeeded, e.problem AS problem, e.goal AS goal,
       e.scope AS scope, e.owner_agent AS owner_agent
ORDER BY id;
