// Full-text (Lucene) indexes for the lexical channel of hybrid retrieval.
CREATE FULLTEXT INDEX experience_text IF NOT EXISTS
FOR (n:Experience) ON EACH [n.problem, n.goal, n.domain];
CREATE FULLTEXT INDEX step_text IF NOT EXISTS
FOR (n:Step) ON EACH [n.action, n.text];
CREATE FULLTEXT INDEX meta_concept_document IF NOT EXISTS
FOR (n:MetaConcept) ON EACH [n.name, n.document];
