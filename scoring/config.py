"""Scoring settings (one frozen model; every stage function takes it explicitly)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

#: Default ``min_relevance``: the lowest gate of a 0.1 grid at which the records ``score`` keeps are
#: ≥ 95% reproductions on the real corpus's ``dev`` part, cross-validated by repository (README, "What
#: reaches the datasets").
MIN_RELEVANCE = 0.7


class ScoreConfig(BaseModel):
    """Knobs of ``reprodiag score``.

    ``threshold``: keep records whose quality score (0–8) is at least this.
    ``min_relevance``: drop records whose ``relevance`` (the offline filter's calibrated probability that
    the thread is a paper-result reproduction) is below this; records without one (LLM extractors) are
    not affected. The filter itself keeps threads from a lower probability (its threshold is set for
    recall 0.97, so extraction sees nearly every reproduction); the datasets take the surer ones.
    ``valuable_min_depth``: an ``unresolved_valuable`` record below the
    threshold is still kept when its ``diagnostic_depth`` is at least this.
    ``tier_weights``: sample weight per temporal tier. ``dedup_threshold``:
    estimated Jaccard similarity (word 3-shingles) above which two records are
    near-duplicates. ``ratios``: train/validation/test shares of records,
    assigned by repository. ``split_date``: if set, records created before it
    go to train and the rest to test (time-based split; repositories may then
    span splits). ``holdout_repos``: always in test.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    threshold: int = Field(default=4, ge=0, le=8)
    min_relevance: float = Field(default=MIN_RELEVANCE, ge=0.0, le=1.0)
    valuable_min_depth: int = Field(default=3, ge=0)
    tier_weights: dict[str, float] = Field(
        default_factory=lambda: {"current": 1.0, "historical": 0.5, "filtered": 0.0})
    dedup: bool = True
    dedup_threshold: float = Field(default=0.8, gt=0, le=1)
    num_perm: int = Field(default=64, ge=16, le=512)
    seed: int = 0
    ratios: tuple[float, float, float] = (0.8, 0.1, 0.1)
    split_date: datetime | None = None
    holdout_repos: frozenset[str] = frozenset()
    target_resolved_share: float = 0.7

    @field_validator("tier_weights")
    @classmethod
    def _weights(cls, v: dict[str, float]) -> dict[str, float]:
        missing = {"current", "historical", "filtered"} - set(v)
        if missing:
            raise ValueError(f"tier_weights lacks {sorted(missing)}")
        if any(w < 0 for w in v.values()):
            raise ValueError("tier weights must be >= 0")
        return v

    @model_validator(mode="after")
    def _ratios(self) -> ScoreConfig:
        if any(r < 0 for r in self.ratios) or abs(sum(self.ratios) - 1.0) > 1e-6:
            raise ValueError(f"split ratios must be >= 0 and sum to 1, got {self.ratios}")
        return self
