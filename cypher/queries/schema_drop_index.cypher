// Drops the index named $index (one of kbgraph's own, made again by the schema right after: see
// kbgraph.store.schema._drop_outdated_vector_indexes).
DROP INDEX $index IF EXISTS;
