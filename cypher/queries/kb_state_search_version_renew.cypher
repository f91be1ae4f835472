// kb_state_search_version_bump for an import (kbgraph.transfer): a new search version for namespace
// $kb if it has a state node, never creating one (the import counts the state node it brings as
// new, and sets its properties from the file only then). Run after the batch's values are set, so
// a state node the batch created does not keep the version its file carried.
MATCH (s:KbState {kb: $kb})
SET s.search_version = randomUUID()
RETURN s.search_version AS search_version;
