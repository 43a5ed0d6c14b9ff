"""Quality score and keep/drop decision of one record (SPEC.md "Record and quality score").

Score components (points; the sum is 0–8):

* ``resolved`` +3: ``is_resolved`` and the thread is closed, or the discussion has an accepted answer.
* ``code`` +2: ``has_code_snippet``.
* ``comments`` +1: at least 3 comments.
* ``engagement`` +1: reactions >= 5, or the thread is referenced elsewhere.
* ``quantified_gap`` +1: both ``symptom.paper_value`` and ``symptom.obtained_value`` are known.

Drop reasons, first match wins (:data:`DROP_ORDER`): ``not_reproduction``,
``bot_only``, ``no_replies`` (0 comments), ``feature_request``,
``environment_setup``, ``temporal_filtered``, ``low_quality``; the batch-level
``near_duplicate`` comes last (:mod:`scoring.dedup`).

``feature_request``: a label such as ``enhancement``/``feature``, or request
wording (:data:`FEATURE_PATTERN`) in a record of type ``other`` without a
quantified gap. ``environment_setup``: a label such as
``installation``/``setup``, or install/import/build-failure wording
(:data:`ENV_PATTERN`) in a record of type ``other``/``framework_version``
without a quantified gap.

``low_quality``: score below the threshold, except ``unresolved_valuable``
records with ``diagnostic_depth >= valuable_min_depth``: those are kept
because they teach a model to recognise hard problems and when to ask.
"""

from __future__ import annotations

import re

from reprodiag.schema import Quality, Record
from scoring.config import ScoreConfig

POINTS = {"resolved": 3, "code": 2, "comments": 1, "engagement": 1, "quantified_gap": 1}
MIN_COMMENTS = 3
MIN_REACTIONS = 5

DROP_ORDER = (
    "not_reproduction",
    "bot_only",
    "no_replies",
    "feature_request",
    "environment_setup",
    "temporal_filtered",
    "low_quality",
    "near_duplicate",
)

FEATURE_LABEL_PATTERN = r"(?i)\b(?:enhancement|feature|feature request|feature-request|proposal|suggestion)\b"
ENV_LABEL_PATTERN = r"(?i)\b(?:install|installation|setup|environment|build|dependencies|compilation)\b"
FEATURE_PATTERN = (
    r"(?i)\b(?:feature request|would be (?:nice|great|helpful|useful) (?:to|if)|please (?:add|support|release)"
    r"|(?:add|adding) support for|plan(?:s|ning)? to (?:release|support|add)|any plans? (?:to|for))\b"
)
ENV_PATTERN = (
    r"(?i)(?:\bpip install\b|\bconda install\b|\bsetup\.py\b|\bno module named\b|\bmodulenotfounderror\b"
    r"|\bimporterror\b|\bcannot import\b|\bundefined symbol\b|\bnvcc\b|could not build wheels"
    r"|\bdll load failed\b|\bfailed to (?:install|build|compile)\b|\binstallation (?:fails|failed|error)\b"
    r"|\bcompil(?:e|ation) (?:error|fails|failed)\b|\blibcu[a-z]*\.so)"
)
FEATURE_LABEL_RE = re.compile(FEATURE_LABEL_PATTERN)
ENV_LABEL_RE = re.compile(ENV_LABEL_PATTERN)
FEATURE_RE = re.compile(FEATURE_PATTERN)
ENV_RE = re.compile(ENV_PATTERN)
FEATURE_TYPES = ("other",)
ENV_TYPES = ("other", "framework_version")


def components(record: Record) -> dict[str, int]:
    """Points per component (all keys present; 0 when not earned)."""
    s = record.stats
    earned = {
        "resolved": (record.is_resolved and s.state == "closed") or s.has_answer,
        "code": record.has_code_snippet,
        "comments": s.comments >= MIN_COMMENTS,
        "engagement": s.reactions >= MIN_REACTIONS or s.referenced,
        "quantified_gap": record.symptom.paper_value is not None and record.symptom.obtained_value is not None,
    }
    return {k: POINTS[k] if v else 0 for k, v in earned.items()}


def drop_reason(record: Record, score: int, tier: str, config: ScoreConfig) -> str | None:
    """The first applicable reason of :data:`DROP_ORDER` (without ``near_duplicate``), or None to keep."""
    s = record.stats
    if not record.is_reproduction:
        return "not_reproduction"
    if s.bot_only:
        return "bot_only"
    if s.comments == 0:
        return "no_replies"
    labels = "\n".join(s.labels)
    quantified = record.symptom.paper_value is not None and record.symptom.obtained_value is not None
    text = record.problem_statement
    if FEATURE_LABEL_RE.search(labels) or (
            record.error_type in FEATURE_TYPES and not quantified and FEATURE_RE.search(text)):
        return "feature_request"
    if ENV_LABEL_RE.search(labels) or (
            record.error_type in ENV_TYPES and not quantified and ENV_RE.search(text)):
        return "environment_setup"
    if tier == "filtered":
        return "temporal_filtered"
    if score < config.threshold and not (
            record.resolution_type == "unresolved_valuable" and record.diagnostic_depth >= config.valuable_min_depth):
        return "low_quality"
    return None


def quality(record: Record, tier: str, config: ScoreConfig) -> Quality:
    comps = components(record)
    score = sum(comps.values())
    reason = drop_reason(record, score, tier, config)
    return Quality(score=score, components=comps, keep=reason is None, drop_reason=reason)
