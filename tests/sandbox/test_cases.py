"""Every bundled case reaches its expected verdict under bwrap, with a stored, resumable trajectory."""

from __future__ import annotations

import json
from pathlib import Path

from reprodiag.store import Store
from sandbox.cases import bundled_case_paths
from sandbox.pipeline import run_replay
from sandbox.spec import load_spec


def test_bundled_cases_reach_expected_verdicts(bwrap_ok: None, store: Store, tmp_path: Path) -> None:
    out = tmp_path / "verdicts.jsonl"
    report = run_replay(store, cases=[], backend="bwrap", bundled=True, output=out, concurrency=2)
    specs = {load_spec(p).id: load_spec(p) for p in bundled_case_paths()}
    verdicts = {v.case_id: v for v in store.iter_verdicts()}
    assert set(verdicts) == set(specs)
    for cid, spec in specs.items():
        v = verdicts[cid]
        assert v.verdict == spec.expected, f"{cid}: {v.verdict} ({v.reason})"
        assert v.backend == "bwrap"
        assert v.before.values and v.after.values
        phases = [s.phase for s in v.steps]
        assert phases.count("before") == spec.run.seeds == phases.count("after")
        assert "fix" in phases
        assert all(s.exit_code == 0 for s in v.steps)
        assert all(s.metric is not None for s in v.steps if s.phase in ("before", "after"))
        if spec.reported_value is not None:
            assert abs(v.before.mean - spec.reported_value) <= 1e-3 * abs(spec.reported_value) or \
                v.verdict == "symptom_not_reproduced"
        if v.verdict == "confirmed":
            assert abs(v.after.mean - spec.paper_value) <= 1e-3 * abs(spec.paper_value)
    assert report.counts["mismatched_expected"] == 0
    assert report.counts["confirmed"] == sum(s.expected == "confirmed" for s in specs.values())
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["case_id"] for x in lines] == sorted(specs)

    # trajectories are exported by the store, one row per step
    rows = list(store.iter_export("trajectories"))
    assert len(rows) == sum(len(v.steps) for v in verdicts.values())

    # a rerun skips every case that already has a verdict and reports the same counts
    again = run_replay(store, cases=[], backend="bwrap", bundled=True, concurrency=2)
    assert again.counts["replayed"] == 0 and again.counts["already_done"] == len(specs)
    assert {k: v for k, v in again.counts.items() if k not in ("replayed", "already_done")} == \
        {k: v for k, v in report.counts.items() if k not in ("replayed", "already_done")}
