"""People check the eval items (and a sample of SFT rows) before a benchmark is published.

- :mod:`reprodiag.review.fields`: the fields a reviewer judges, their validation and comparison.
- :mod:`reprodiag.review.decisions`: the workspace's ``reviews`` table (one row per decision, append-only) and
  how several reviewers' decisions combine for ``build``.
- :mod:`reprodiag.review.items`: what is reviewed (the records ``build`` would turn into eval items, and a
  seeded sample of SFT rows), with each thread as a reviewer reads it (redacted, evidence quotes located).
- :mod:`reprodiag.review.page` and :mod:`reprodiag.review.server`: ``reprodiag review serve``, a local page.
- :mod:`reprodiag.review.label_studio` and :mod:`reprodiag.review.exchange`: ``review export`` / ``review
  import`` (Label Studio tasks and JSON exports, or JSONL).
- :mod:`reprodiag.review.agreement`: what the dataset card reports about the reviews.
"""
