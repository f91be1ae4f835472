"""The learning loop: feedback on search results, maintenance of utilities and
markers, and the agents' ability matrix."""
