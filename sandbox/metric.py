"""Reading the metric a run printed (``metric_regex``) or wrote (``metric_json``)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from reprodiag.schema import RunSpec
from sandbox.workdir import read_inside


class MetricError(ValueError):
    """The metric could not be read; ``str()`` is one line."""


def parse_number(raw: object) -> float:
    if isinstance(raw, bool):
        raise MetricError(f"metric is a boolean ({raw}), expected a number")
    if isinstance(raw, int | float):
        val = float(raw)
    elif isinstance(raw, str):
        text = raw.strip().rstrip("%").replace(",", "")
        try:
            val = float(text)
        except ValueError:
            raise MetricError(f"metric {raw[:60]!r} is not a number") from None
    else:
        raise MetricError(f"metric is a {type(raw).__name__}, expected a number")
    if not math.isfinite(val):
        raise MetricError(f"metric is {val}, not a finite number")
    return val


def metric_from_stdout(stdout: str, pattern: str) -> float:
    """The first capture group of the *last* match of ``pattern`` in ``stdout``."""
    matches = list(re.finditer(pattern, stdout, flags=re.MULTILINE))
    if not matches:
        raise MetricError(f"metric_regex {pattern!r} matched nothing in the output")
    return parse_number(matches[-1].group(1))


def metric_from_json(workdir: Path, ref: str) -> float:
    """``FILE:key.path`` — a dotted key path (list indices as numbers) into a JSON file in the work dir."""
    file_part, _, key = ref.partition(":")
    try:
        raw = read_inside(workdir, file_part)
    except ValueError as exc:
        raise MetricError(f"metric_json: {exc}") from None
    try:
        doc = json.loads(raw.decode("utf-8", errors="strict"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MetricError(f"metric_json: {file_part} is not valid JSON ({str(exc)[:80]})") from None
    cur: object = doc
    for part in key.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.lstrip("-").isdigit() and -len(cur) <= int(part) < len(cur):
            cur = cur[int(part)]
        else:
            raise MetricError(f"metric_json: key {key!r} not found in {file_part} (at {part!r})")
    return parse_number(cur)


def read_metric(run: RunSpec, stdout: str, workdir: Path) -> float:
    """The metric of one run, by ``metric_json`` if given, else ``metric_regex``."""
    if run.metric_json:
        return metric_from_json(workdir, run.metric_json)
    if run.metric_regex:
        return metric_from_stdout(stdout, run.metric_regex)
    raise MetricError("the case gives neither metric_regex nor metric_json")
