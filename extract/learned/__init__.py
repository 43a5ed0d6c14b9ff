"""Learned, calibrated models of the offline extractor: the relevance filter, is_resolved, value ranking
and error type. Each is a sparse linear model over named features (``features.py``), trained by
``reprodiag train`` from the real-thread corpus's ``dev`` part and shipped as a small JSON weights file
(``extract/data/models/``) that the runtime reads without scikit-learn."""
