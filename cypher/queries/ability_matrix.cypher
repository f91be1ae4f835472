// The ability matrix of namespace $kb (EDV): attempts and successes of each agent in each domain.
MATCH (a:Agent {kb: $kb})-[p:PERFORMED]->(d:Domain {kb: $kb})
RETURN a.id AS agent, d.name AS domain, p.attempts AS attempts, p.successes AS successes
ORDER BY agent, domain;
