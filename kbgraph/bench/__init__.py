"""Benchmarks. Each prints its figures next to a baseline measured in the same run."""
