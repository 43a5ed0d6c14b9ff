"""The weights-file format: round trip, calibrated probabilities, and one-line errors for missing or corrupt
files (library and CLI)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from extract.learned.linear import LinearModel, model_path, shipped
from extract.learned.predict import GRADER_MODEL_NAMES, MODEL_NAMES
from reprodiag.errors import UserError


def _model() -> LinearModel:
    return LinearModel(name="m", classes=("positive",), bias=(-0.5,), coef={"a": (2.0,), "b": (-1.0,)},
                       calib_a=0.8, calib_b=0.1, threshold=0.4, meta={"seed": 3})


def test_round_trip_and_calibrated_probability(tmp_path: Path) -> None:
    m = _model()
    p = tmp_path / "m.json"
    m.save(p)
    back = LinearModel.load(p)
    assert back == m and back.digest == m.digest
    z = -0.5 + 2.0 * 1.0 + (-1.0) * 0.5
    assert back.score({"a": 1.0, "b": 0.5, "unseen": 9.0}) == pytest.approx(z)
    assert back.prob({"a": 1.0, "b": 0.5}) == pytest.approx(1 / (1 + math.exp(-(0.8 * z + 0.1))))


def test_multiclass_probabilities_sum_to_one() -> None:
    m = LinearModel(name="t", classes=("x", "y", "z"), bias=(0.0, 1.0, -1.0), coef={"f": (1.0, 0.0, 3.0)},
                    temperature=2.0)
    probs = m.probs({"f": 1.0})
    assert sum(probs.values()) == pytest.approx(1.0)
    assert max(probs, key=probs.get) == "z"  # scores 1, 1, 2
    assert probs["x"] == pytest.approx(probs["y"])
    assert probs["z"] == pytest.approx(math.exp(1.0) / (2 * math.exp(0.5) + math.exp(1.0)))


@pytest.mark.parametrize(("content", "needle"), [
    (b"{not json", "invalid JSON"),
    (b'{"format": "other"}', "not a reprodiag-linear-1 weights file"),
    (json.dumps({"format": "reprodiag-linear-1", "name": "m", "classes": ["positive"], "bias": [0.0],
                 "coef": {"a": [1.0, 2.0]}}).encode(), "bad weights for feature"),
    (json.dumps({"format": "reprodiag-linear-1", "name": "m", "classes": ["positive"], "bias": [0.0],
                 "coef": {}, "temperature": 0}).encode(), "invalid calibration"),
    (json.dumps({"format": "reprodiag-linear-1", "classes": ["positive"], "bias": [0.0], "coef": {}}).encode(),
     "missing key"),
    (b"\xff\xfe\x00", "not UTF-8"),
])
def test_corrupt_files_are_one_line_user_errors(tmp_path: Path, content: bytes, needle: str) -> None:
    p = tmp_path / "m.json"
    p.write_bytes(content)
    with pytest.raises(UserError) as err:
        LinearModel.load(p)
    msg = str(err.value)
    assert needle in msg and "\n" not in msg and "reprodiag train" in msg or "not UTF-8" in msg


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="model weights not found: .*nope.json"):
        LinearModel.load(tmp_path / "nope.json")


def test_every_shipped_model_loads() -> None:
    for name in MODEL_NAMES + GRADER_MODEL_NAMES:
        m = shipped(name)
        assert m.name == name and m.coef and model_path(name).exists()
        assert m.meta.get("seed") == 0


@pytest.mark.parametrize("damage", ["missing", "corrupt"])
def test_cli_with_missing_or_corrupt_weights_exits_2_with_one_line(tmp_path: Path, cli, damage: str) -> None:
    from tests.extract.threads import POSITIVE, REPLY, make_thread

    models = tmp_path / "models"
    models.mkdir()
    for name in MODEL_NAMES:
        (models / f"{name}.json").write_text(model_path(name).read_text(encoding="utf-8"), encoding="utf-8")
    if damage == "missing":
        (models / "filter.json").unlink()
    else:
        (models / "filter.json").write_text('{"format": "reprodiag-linear-1", "coef": [', encoding="utf-8")
    src = tmp_path / "threads.jsonl"
    src.write_text(json.dumps(make_thread(*POSITIVE[0], REPLY).model_dump(mode="json")) + "\n", encoding="utf-8")
    proc = cli("filter", "--input", str(src), workspace=tmp_path / "ws", env={"REPRODIAG_MODELS_DIR": str(models)})
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "filter.json" in lines[0] and "Traceback" not in proc.stderr
    assert ("not found" if damage == "missing" else "corrupt") in lines[0]
