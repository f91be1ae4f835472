// Export: the KbState node of namespace $kb (at most one per namespace: it has no key of its own
// besides kb), with its element id. $kb; $after and $limit are accepted like the other pages'.
MATCH (n:KbState {kb: $kb})
RETURN null AS key, elementId(n) AS element_id
ORDER BY element_id
LIMIT $limit;
