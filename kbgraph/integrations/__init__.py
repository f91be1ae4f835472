"""Adapters for agent frameworks; each imports its framework only when used."""
