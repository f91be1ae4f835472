// When the newest experience of namespace $kb was stored (null: it holds none): the time an
// evaluation namespace stamped before its build time was kept counts as built
// (kbgraph.search.eval.cached_namespace).
MATCH (e:Experience {kb: $kb})
RETURN max(e.created_at) AS created_at;
