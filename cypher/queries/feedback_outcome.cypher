// Task-conditioned feedback: one Outcome node per reported task (id $id, namespace $kb) holding
// the task's vector $vector, the $outcome in [0, 1], the time $now, the $agent and the first 500
// characters of the $task text, linked from each used experience in $ids by HAD_OUTCOME. Search
// weighs an experience by the outcomes it had on tasks like the query.
MERGE (o:Outcome {kb: $kb, id: $id})
ON CREATE SET o.outcome = $outcome, o.at = $now, o.agent = $agent, o.task = left($task, 500)
WITH o
CALL db.create.setNodeVectorProperty(o, 'embedding', $vector)
WITH o
UNWIND $ids AS id
MATCH (e:Experience {kb: $kb, id: id})
MERGE (e)-[:HAD_OUTCOME]->(o)
RETURN count(*) AS linked;
