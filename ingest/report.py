"""The report an ingest run returns (and the CLI prints, or prints as JSON)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class LLMCounts(BaseModel):
    """One LLM stage's questions in a run. Each ends one way — valid at the first try, repaired (cut
    to its complete values), valid after a retry, or fell back to the rule-based result for that
    item — so the four add up to ``calls``."""

    calls: int = 0
    valid_first_try: int = 0
    repaired: int = 0
    retried: int = 0
    fell_back: int = 0
    last_fallback_reason: str = ""


class IngestReport(BaseModel):
    records_read: int = 0
    records_rejected: int = 0
    rejected: list[str] = Field(default_factory=list, description="file:line: field: reason, per skipped record")
    records_already_ingested: int = 0
    duplicates_skipped: int = Field(
        default=0, description="Records that repeat an earlier record of this run exactly (same id, same content).")
    experiences_new: int = 0
    experiences_existing: int = 0
    experiences_merged: int = 0
    abstract_experiences: int = 0
    concepts: int = 0
    insights: int = 0
    meta_concepts: int = 0
    meta_concepts_new: int = 0
    documents_updated: int = 0
    consolidated: Literal["incremental", "from scratch", ""] = Field(
        default="", description="How pass 2 ran: for the experiences written since the last consolidation of this "
                                "KnowledgeBase, or over the whole namespace (ingest/consolidate.py).")
    consolidations_followed: int = Field(
        default=0, description="Consolidations of other processes (or KnowledgeBases) since this one's last, "
                               "followed from the facts log instead of planning from scratch (ingest/link_state/_log.py).")
    relations: dict[str, int] = Field(default_factory=dict)
    stage_seconds: dict[str, float] = Field(default_factory=dict)
    total_seconds: float = 0.0
    trajectories_per_second: float = 0.0
    peak_memory_mb: float = 0.0
    embedding_cache_hits: int = 0
    embedding_cache_misses: int = 0
    llm: dict[str, LLMCounts] = Field(
        default_factory=dict, description="The LLM path's questions by stage (abstract, reflect, integrate); empty "
                                          "on the rule-based path (ingest/llm_fallback.py).")
    maintenance_run: str | None = Field(
        default=None, description="The maintenance run this ingest triggered by crossing a growth checkpoint.")
    plans_warmed_s: float | None = Field(
        default=None, description="Seconds this ingest spent running kbgraph's statements once in a namespace of its own "
                                  "after writing warm_plans_after experiences or more, so that Neo4j's new plans are "
                                  "made before the next add or search needs them (kbgraph.plan_warmup); None: not run.")
    one_transaction_refused: int = Field(
        default=0, description="1 when Neo4j refused this ingest's one write transaction (an input of one write batch, "
                               "ingest/one_transaction.py) and it was written under the lease instead; 0 otherwise.")
    committed_with: int = Field(
        default=0, description="Other adds of this process committed in the same transaction as this one (group commit, "
                               "ingest/group_commit.py): the consolidation's figures (merges, concepts, relations, "
                               "documents) are the group's.")
    growth_checked: tuple[int, int] | None = Field(
        default=None, exclude=True, description="The growth total (before, after) an add checked in its one write "
                                                "transaction (ingest/one_transaction.py), for the façade's maintenance.")

    def take_consolidation(self, other: IngestReport) -> None:
        """The figures of ``other``'s consolidation (pass 2), as this report's: an add committed in
        a group reports the consolidation its group shared (ingest/group_commit.py)."""
        for name in CONSOLIDATION_FIELDS:
            setattr(self, name, getattr(other, name))
        self.relations = dict(other.relations)
        for stage in CONSOLIDATION_STAGES:
            if stage in other.stage_seconds:
                self.stage_seconds[stage] = other.stage_seconds[stage]


#: What pass 2 (ingest/consolidate.py) sets in a report, and the stages it times.
CONSOLIDATION_FIELDS = ("experiences_merged", "abstract_experiences", "concepts", "insights", "meta_concepts",
                        "meta_concepts_new", "documents_updated", "consolidated", "consolidations_followed")
CONSOLIDATION_STAGES = ("merge", "concepts", "link", "follow")
