"""What kbgraph tells an agent, checked against its evidence: every meta-concept document and every
skill an export would write (``kbgraph audit``; docs/ingestion.md, "Checking what documents say").

- :mod:`kbgraph.audit._findings` — a finding and the checks there are;
- :mod:`kbgraph.audit._documents` — the checks of a document's statements against the insights
  behind them, recounted from the graph;
- :mod:`kbgraph.audit._skills` — the checks of a skill, against what it is rendered from;
- :mod:`kbgraph.audit._run` — reading a namespace and running them all.
"""

from kbgraph.audit._documents import DocumentInput, audit_document
from kbgraph.audit._findings import CHECKS, AuditReport, Finding
from kbgraph.audit._run import audit_namespace
from kbgraph.audit._skills import audit_skill

__all__ = ["CHECKS", "AuditReport", "DocumentInput", "Finding", "audit_document", "audit_namespace", "audit_skill"]
