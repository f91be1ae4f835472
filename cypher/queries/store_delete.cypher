// LangGraph store, PutOp without a value: deletes the item of namespace $kb of each id
// of $wanted, with its vectors (a missing item is no error).
UNWIND $wanted AS id
MATCH (i:StoreItem {kb: $kb, id: id})
OPTIONAL MATCH (i)-[:HAS_VECTOR]->(v:StoreVector)
DETACH DELETE v, i
RETURN count(DISTINCT i) AS deleted;
