"""Cypher shipped with kbgraph: schema/, queries/ (named queries the code runs), inspect/ (for people)."""
