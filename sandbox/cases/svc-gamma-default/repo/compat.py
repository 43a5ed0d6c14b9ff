"""Defaults of SVC across scikit-learn releases (0.22 changed gamma from 'auto' to 'scale')."""

# The scikit-learn release whose defaults this environment behaves like.
SKLEARN_DEFAULTS = "0.21"

_SVC = {
    "0.21": {"gamma": "auto"},   # 1 / n_features
    "0.22": {"gamma": "scale"},  # 1 / (n_features * X.var())
}


def svc_defaults(version: str) -> dict:
    return dict(_SVC[version])
