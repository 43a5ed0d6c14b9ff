"""RBF-SVM baseline on scikit-learn's digits.

The paper was run with scikit-learn >= 0.22. Older releases used another
default for ``gamma``; compat.py reproduces the defaults of the release named
in ``SKLEARN_DEFAULTS`` so the behaviour does not depend on what is installed.
"""
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.svm import SVC

from compat import SKLEARN_DEFAULTS, svc_defaults

X, y = load_digits(return_X_y=True)
X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
model = SVC(C=1.0, **svc_defaults(SKLEARN_DEFAULTS))
model.fit(X_tr, y_tr)
print(f"scikit-learn defaults of {SKLEARN_DEFAULTS}: gamma={model.gamma}")
print(f"top1: {model.score(X_te, y_te):.4f}")
