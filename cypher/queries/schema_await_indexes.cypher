// Blocks until every index is ONLINE (or the timeout, in seconds, passes).
CALL db.awaitIndexes($timeout_s);
