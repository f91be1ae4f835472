"""The core layer: errors, ids, settings and weights, the data model, and the pure rules
every other layer shares. It imports nothing from kbgraph outside itself."""
