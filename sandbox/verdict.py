"""The tolerance rules that turn metric values into a verdict (pure functions).

Definitions (all relative, in the metric's own unit):

* "x is within tolerance t of v" means ``|x - v| <= t * |v|`` (plus a 1e-9·max(1, |v|)
  allowance for floating-point round-off). With ``v == 0`` only ``x == 0`` is within.
* spread across seeds is the coefficient of variation ``std / |mean|`` with the
  population standard deviation (ddof=0); over 0.20 the case is ``unstable``.
  A mean of 0 with a non-zero std counts as an infinite spread.

Order of the rules in :func:`decide`: no values → ``error``; spread → ``unstable``;
symptom (``before`` within tolerance of ``reported_value``, or, without one,
outside tolerance of ``paper_value``) not seen → ``symptom_not_reproduced``;
``after`` within tolerance of ``paper_value`` → ``confirmed``; else
``fix_not_confirmed`` with ``direction_ok`` telling whether ``after`` moved
strictly closer to the paper than ``before`` (weaker evidence).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from reprodiag.schema import Measurement, ReplaySpec, Verdict, VerdictKind
from sandbox.spec import tolerance_for

#: Coefficient of variation above which a case is unfit for verification.
MAX_CV = 0.20


class Decision(BaseModel):
    """The outcome of :func:`decide`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    verdict: VerdictKind
    reason: str
    direction_ok: bool | None = None
    tolerance: float


def within(x: float, v: float, t: float) -> bool:
    """``|x - v| <= t·|v|`` with a tiny round-off allowance."""
    return abs(x - v) <= t * abs(v) + 1e-9 * max(1.0, abs(v))


def measure(values: Sequence[float]) -> Measurement:
    """Values with their mean and population std (None for an empty list)."""
    vals = [float(v) for v in values]
    if not vals:
        return Measurement()
    mean = math.fsum(vals) / len(vals)
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in vals) / len(vals))
    return Measurement(values=vals, mean=mean, std=std)


def spread(m: Measurement) -> float:
    """Coefficient of variation ``std/|mean|``; 0 for one value, inf for mean 0 with std > 0."""
    if m.mean is None or m.std is None or len(m.values) < 2 or m.std == 0:
        return 0.0
    if m.mean == 0:
        return math.inf
    return m.std / abs(m.mean)


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def decide(spec: ReplaySpec, before_values: Sequence[float], after_values: Sequence[float]) -> Decision:
    """Apply the tolerance rules (module docstring) to the metric values of both phases."""
    tol = tolerance_for(spec)
    before, after = measure(before_values), measure(after_values)
    if any(not math.isfinite(v) for v in (*before.values, *after.values)):
        return Decision(verdict="error", reason="a metric value is not finite (nan or inf)", tolerance=tol)
    if before.mean is None:
        return Decision(verdict="error", reason="no metric value from the failing configuration", tolerance=tol)
    if after.mean is None:
        return Decision(verdict="error", reason="no metric value after the fix", tolerance=tol)
    for name, m in (("before", before), ("after", after)):
        cv = spread(m)
        if cv > MAX_CV:
            return Decision(
                verdict="unstable",
                reason=f"spread across seeds {name} the fix is {cv:.0%} (std/|mean|), over {MAX_CV:.0%}",
                tolerance=tol,
            )
    paper = spec.paper_value
    mb, ma = before.mean, after.mean
    if spec.reported_value is not None:
        if not within(mb, spec.reported_value, tol):
            return Decision(
                verdict="symptom_not_reproduced",
                reason=f"before the fix {spec.metric} = {_fmt(mb)}, not within {tol:.0%} of the reported "
                f"{_fmt(spec.reported_value)}",
                tolerance=tol,
            )
    elif within(mb, paper, tol):
        return Decision(
            verdict="symptom_not_reproduced",
            reason=f"before the fix {spec.metric} = {_fmt(mb)} is already within {tol:.0%} of the paper's "
            f"{_fmt(paper)}",
            tolerance=tol,
        )
    if within(ma, paper, tol):
        return Decision(
            verdict="confirmed",
            reason=f"{spec.metric} moved from {_fmt(mb)} to {_fmt(ma)}, within {tol:.0%} of the paper's {_fmt(paper)}",
            direction_ok=True,
            tolerance=tol,
        )
    closer = abs(ma - paper) < abs(mb - paper)
    if closer:
        reason = (f"{spec.metric} moved from {_fmt(mb)} toward the paper's {_fmt(paper)} but reached only "
                  f"{_fmt(ma)}, outside {tol:.0%} (weaker evidence: right direction only)")
    else:
        reason = (f"{spec.metric} went from {_fmt(mb)} to {_fmt(ma)}, no closer to the paper's {_fmt(paper)} "
                  f"(tolerance {tol:.0%})")
    return Decision(verdict="fix_not_confirmed", reason=reason, direction_ok=closer, tolerance=tol)


def skipped_verdict(spec: ReplaySpec, reason: str) -> Verdict:
    """A case not replayed on this host (no backend, no GPU, infrastructure failure); a rerun replays it."""
    return Verdict(case_id=spec.id, verdict="skipped", reason=reason, tolerance=tolerance_for(spec),
                   thread_id=spec.thread_id, error_type=spec.error_type, expected=spec.expected)


def error_verdict(case_id: str, reason: str, spec: ReplaySpec | None = None) -> Verdict:
    """A case that cannot be replayed as written (its spec or files are broken)."""
    if spec is None:
        return Verdict(case_id=case_id, verdict="error", reason=reason)
    return Verdict(case_id=case_id, verdict="error", reason=reason, expected=spec.expected, thread_id=spec.thread_id)
