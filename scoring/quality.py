"""The quality score and keep/drop rules (SPEC.md "Record and quality score"), applied by
:func:`scoring.vectorized.score_frame`.

Score components (points; the sum is 0–8):

* ``resolved`` +3: ``is_resolved`` and the thread is closed, or the discussion has an accepted answer.
* ``code`` +2: ``has_code_snippet``.
* ``comments`` +1: at least 3 comments.
* ``engagement`` +1: reactions >= 5, or the thread is referenced elsewhere.
* ``quantified_gap`` +1: both ``symptom.paper_value`` and ``symptom.obtained_value`` are known.

Drop reasons, first match wins (:data:`DROP_ORDER`): ``not_reproduction``,
``low_relevance`` (the filter's probability below ``min_relevance``), ``bot_only``, ``no_replies`` (0 comments), ``feature_request``,
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

POINTS = {"resolved": 3, "code": 2, "comments": 1, "engagement": 1, "quantified_gap": 1}
MIN_COMMENTS = 3
MIN_REACTIONS = 5

DROP_ORDER = (
    "not_reproduction",
    "low_relevance",
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
#: Literals one of which (ASCII case-insensitively) every match of :data:`ENV_PATTERN` holds: the pattern runs
#: only on the texts that hold one (or a non-ASCII letter that ``(?i)`` folds to ASCII, see
#: :data:`CASE_FOLDS`). ``tests/scoring/test_vectorized.py`` checks the claim.
ENV_NEEDLES = ("pip install", "conda install", "setup.py", "no module named", "modulenotfounderror", "importerror",
               "cannot import", "undefined symbol", "nvcc", "could not build wheels", "dll load failed", "failed to ",
               "installation ", "compil", "libcu")
#: Non-ASCII letters that case-insensitive regexes match as ASCII ones (İ ı → i, K → k, ſ → s).
CASE_FOLDS = ("\u0130", "\u0131", "\u212a", "\u017f")
FEATURE_TYPES = ("other",)
ENV_TYPES = ("other", "framework_version")
