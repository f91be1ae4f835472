"""Workflow shapes, kept importable from their old place: they moved to :mod:`kbgraph.core.shapes`
(the store compares shapes too, and the store sits below the ingestion pipeline)."""

from __future__ import annotations

from kbgraph.core.shapes import VERB_CLASSES, is_subsequence, operation_shape, operations, verb_of, verb_shape

__all__ = ["VERB_CLASSES", "is_subsequence", "operation_shape", "operations", "verb_of", "verb_shape"]
