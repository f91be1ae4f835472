// Whether namespace $kb holds an experience with steps in domain $domain. The structural channel
// is skipped for a domain without any: its experiences have no workflow shape to match.
RETURN EXISTS { MATCH (e:Experience {kb: $kb, domain: $domain})-[:HAS_STEP]->() } AS has_steps;
