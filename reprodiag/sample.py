"""The bundled sample corpus (package data, so it works from a wheel).

``threads.jsonl``: fictional Threads written for this project (not copied from
GitHub). ``pwc_links.json``: a Papers-with-Code-style links dump for the
fictional repositories. ``labels.jsonl``: hand labels for the threads
(``thread_id``, ``is_reproduction``, ``error_type``, ``resolution_type``,
``metric``, ``paper_value``, ``obtained_value``, ``root_cause``).
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from reprodiag.schema import Thread, parse_thread

_PKG = "reprodiag.data"


def sample_dir() -> Path:
    """Directory of the bundled sample files."""
    return Path(str(resources.files(_PKG).joinpath("sample")))


def _jsonl(name: str) -> list[dict[str, Any]]:
    path = sample_dir() / name
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load_sample_threads() -> list[Thread]:
    return [parse_thread(d) for d in _jsonl("threads.jsonl")]


def load_sample_labels() -> dict[str, dict[str, Any]]:
    return {d["thread_id"]: d for d in _jsonl("labels.jsonl")}


def sample_links_path() -> Path:
    return sample_dir() / "pwc_links.json"
