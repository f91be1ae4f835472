// Evaluation: the concrete experiences of namespace $kb that stand for more than one run (merged
// look-alikes), with the problem each shows and the runs it stands for. kbgraph.search.eval.shown_text
// finds which of those runs the shown problem is the own text of, so that a leave-one-out query is
// kept from the text of the run it was written from (the suite's own_text_hidden column).
MATCH (e:Experience {kb: $kb})
WHERE e.kind = 'concrete' AND size(coalesce(e.source_ids, [])) > 1
RETURN e.id AS id, coalesce(e.problem, '') AS problem, e.source_ids AS source_ids
ORDER BY id;
