"""Bundled replay cases: one tiny repository per root-cause type, plus negative cases.

Each ``<name>/case.toml`` is a :class:`reprodiag.schema.ReplaySpec` whose
``expected`` verdict the case must reach; ``<name>/repo`` is its source.
"""

from __future__ import annotations

from pathlib import Path

CASES_DIR = Path(__file__).resolve().parent


def bundled_case_paths() -> list[Path]:
    """The bundled ``case.toml`` files, sorted by case directory name."""
    return sorted(p for p in CASES_DIR.glob("*/case.toml") if p.is_file())
