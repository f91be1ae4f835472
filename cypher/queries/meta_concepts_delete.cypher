// Removes every meta-concept of namespace $kb (and so every INSTANCE_OF, ABOUT and EXHIBITS
// edge): the first half of a full recluster, in the same transaction as the second.
MATCH (m:MetaConcept {kb: $kb})
DETACH DELETE m
RETURN count(*) AS deleted;
