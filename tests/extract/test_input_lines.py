"""Forgiving input, loud about it: null optional GitHub fields read as defaults; ``--skip-invalid`` sends bad
lines to ``<input>.rejects.jsonl`` with line number and reason and goes on; without it the first bad line
stops with one error line (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.extract.threads import POSITIVE, REPLY, make_thread


def _lines(tmp_path: Path) -> Path:
    good = [make_thread(t, b, REPLY, number=i).model_dump(mode="json") for i, (t, b) in enumerate(POSITIVE[:3])]
    nulls = dict(good[1], author_association=None, labels=None, reactions=None, state_reason=None, body=None)
    nulls["comments"] = [dict(c, author_association=None, reactions=None, replies=None, body=None)
                         for c in nulls["comments"]]
    src = tmp_path / "threads.jsonl"
    src.write_text(json.dumps(good[0]) + "\n{not json\n" + json.dumps(nulls) + "\n"
                   + json.dumps({"repo": "no-slash", "number": 1}) + "\n" + json.dumps(good[2]) + "\n",
                   encoding="utf-8")
    return src


def test_null_optional_fields_read_as_defaults() -> None:
    from reprodiag.schema import parse_thread

    doc = make_thread(*POSITIVE[0], REPLY).model_dump(mode="json")
    doc.update(author_association=None, labels=None, reactions=None, comments=None, title=None)
    t = parse_thread(doc)
    assert (t.author_association, t.labels, t.reactions, t.comments, t.title) == ("NONE", [], 0, [], "")


def test_without_skip_invalid_the_first_bad_line_stops(tmp_path: Path, cli) -> None:  # noqa: ANN001
    src = _lines(tmp_path)
    proc = cli("filter", "--input", str(src), "--output", str(tmp_path / "d.jsonl"), workspace=tmp_path / "w")
    assert proc.returncode == 2 and "threads.jsonl:2" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "d.jsonl").exists()


def test_skip_invalid_writes_rejects_and_goes_on(tmp_path: Path, cli) -> None:  # noqa: ANN001
    src = _lines(tmp_path)
    proc = cli("-q", "filter", "--input", str(src), "--output", str(tmp_path / "d.jsonl"), "--skip-invalid",
               workspace=tmp_path / "w")
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)
    assert rep["counts"]["threads"] == 3 and rep["counts"]["skipped invalid lines"] == 2
    rejects = [json.loads(x) for x in Path(rep["outputs"]["rejects"]).read_text(encoding="utf-8").splitlines()]
    assert [r["line"] for r in rejects] == [2, 4]
    assert "JSON" in rejects[0]["reason"] and "repo" in rejects[1]["reason"]
    assert len((tmp_path / "d.jsonl").read_text().splitlines()) == 3
    proc = cli("-q", "extract", "--input", str(src), "--output", str(tmp_path / "r.jsonl"), "--skip-invalid",
               "--no-filter", workspace=tmp_path / "w")
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)
    assert rep["counts"]["records"] == 3 and rep["counts"]["skipped invalid lines"] == 2
