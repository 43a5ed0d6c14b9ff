"""reprodiag eval / grade end to end: baselines, providers on the fake servers, resume, errors, CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from eval_diagnosis.io import load_eval_set
from eval_diagnosis.pipeline import run_eval, run_grade
from reprodiag.errors import UserError
from reprodiag.store import Store
from tests.fakes.llm_server import Reply

KEY = "sk-test-SECRET-4242424242"


def _lines(p: Path) -> list[dict]:
    return [json.loads(x) for x in p.read_text(encoding="utf-8").splitlines() if x.strip()]


def _small_set(built: Path, tmp_path: Path, n: int) -> Path:
    items = load_eval_set(built)[:n]
    p = tmp_path / "small.jsonl"
    p.write_text("".join(i.model_dump_json() + "\n" for i in items), encoding="utf-8")
    return p


def test_both_baselines_produce_results_and_report(built: Path, tmp_path: Path) -> None:
    rep = run_eval(built, models=["baseline:prior", "baseline:rules"], grader="lexical", out_dir=tmp_path / "e",
                   concurrency=4, store=None)
    n = len(load_eval_set(built))
    assert rep.counts["answered"] == 2 * n
    res = json.loads((tmp_path / "e" / "results.json").read_text())
    assert set(res["models"]) == {"baseline:prior", "baseline:rules"} and res["n_items"] == n
    for m in res["models"].values():
        o = m["overall"]
        assert o["n"] == n and o["errors"] == 0
        assert 0 <= o["hit_at_1"] <= o["hit_at_3"] <= o["hit_any"] <= 1
        assert set(o["ci95"]) >= {"hit_at_1", "hit_any", "false_positive_rate"}
        assert set(m["per_type"]) <= {"hyperparameter", "data", "evaluation_protocol", "framework_version",
                                      "seed_hardware"}
    assert res["models"]["baseline:rules"]["overall"]["hit_any"] > 0
    grades = _lines(tmp_path / "e" / "grades.jsonl")
    assert len(grades) == 2 * n
    assert set(grades[0]) >= {"id", "model", "hit", "hit_rank", "directions", "false_positives"}
    assert set(grades[0]["directions"][0]) >= {"text", "matched"}
    html = (tmp_path / "e" / "report.html").read_text(encoding="utf-8")
    assert "<svg" in html and "baseline:rules" in html
    assert "<script" not in html and "http://" not in html.replace("http://www.w3.org/2000/svg", "")


def test_resume_skips_answered_and_matches_clean_run(built: Path, tmp_path: Path) -> None:
    models = ["baseline:rules", "baseline:prior"]
    clean = tmp_path / "clean"
    run_eval(built, models=models, grader="lexical", out_dir=clean, concurrency=2, store=None)
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    lines = (clean / "answers.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (crashed / "answers.jsonl").write_text("".join(lines[:5]) + lines[5][:17], encoding="utf-8")  # torn write
    rep = run_eval(built, models=models, grader="lexical", out_dir=crashed, concurrency=2, store=None)
    assert rep.counts["reused"] == 5 and rep.counts["answered"] == len(lines) - 5
    keys = [(r["id"], r["model"]) for r in _lines(crashed / "answers.jsonl")]
    assert len(keys) == len(set(keys)) == len(lines)
    assert (crashed / "results.json").read_text() == (clean / "results.json").read_text()
    assert (crashed / "grades.jsonl").read_text() == (clean / "grades.jsonl").read_text()
    again = run_eval(built, models=models, grader="lexical", out_dir=crashed, concurrency=2, store=None)
    assert again.counts["answered"] == 0


def test_openai_runner_cache_and_no_secret(built: Path, tmp_path: Path, openai_server,  # noqa: ANN001
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    openai_server.default = Reply.of_text("1. Learning-rate warmup is too short because the paper used 4000 steps\n"
                                          "2. Test-time augmentation (ten-crop)")
    es = _small_set(built, tmp_path, 4)
    store = Store(tmp_path / "ws")
    run_eval(es, models=["openai:gpt-test"], grader="lexical", out_dir=tmp_path / "a", concurrency=3, store=store)
    calls = openai_server.api_requests("/v1/chat/completions")
    assert len(calls) == 4 and calls[0].model == "gpt-test"
    assert {k.lower(): v for k, v in calls[0].headers.items()}["authorization"] == f"Bearer {KEY}"
    assert "Symptom:" in calls[0].prompt_text
    rep = run_eval(es, models=["openai:gpt-test"], grader="lexical", out_dir=tmp_path / "b", concurrency=3,
                   store=store)
    assert rep.counts["cached"] == 4 and len(openai_server.api_requests("/v1/chat/completions")) == 4
    store.close()
    for d in (tmp_path / "a", tmp_path / "b", tmp_path / "ws"):
        for f in d.rglob("*"):
            if f.is_file():
                assert KEY.encode() not in f.read_bytes(), f


def test_provider_failures_are_retried_then_counted_as_errors(tmp_path: Path, openai_server,  # noqa: ANN001
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    es = tmp_path / "three.jsonl"
    es.write_text("".join(json.dumps({"id": f"q{i}", "error_type": "data", "symptom": f"accuracy {70 + i} vs 80",
                                      "gold_root_cause": "wrong split"}) + "\n" for i in range(3)), encoding="utf-8")
    openai_server.responder = lambda req: (Reply.error(500, f"boom {KEY}", retry_after=0.01)
                                           if "accuracy 70 vs" in req.prompt_text else Reply.of_text(""))
    rep = run_eval(es, models=["openai:gpt-test"], grader="lexical", out_dir=tmp_path / "e", concurrency=2,
                   store=None)
    res = json.loads((tmp_path / "e" / "results.json").read_text())
    assert rep.counts["errors"] == 1 and res["errors"]["openai:gpt-test"] == 1
    assert res["models"]["openai:gpt-test"]["overall"]["n"] == 2
    grades = {g["id"]: g for g in _lines(tmp_path / "e" / "grades.jsonl")}
    assert grades["q0"]["error"] and "500" in grades["q0"]["error"] and not grades["q0"]["hit"]
    assert KEY not in json.dumps(grades)
    assert all(not grades[q]["hit"] and grades[q]["reason"] == "miss: empty answer" and grades[q]["error"] is None
               for q in ("q1", "q2"))
    failing_calls = [r for r in openai_server.requests if "accuracy 70 vs" in r.prompt_text]
    assert len(failing_calls) >= 2  # retried
    # a later run asks again for the failed item only
    openai_server.responder = None
    openai_server.default = Reply.of_text("1. the data split")
    before = len(openai_server.requests)
    rep2 = run_eval(es, models=["openai:gpt-test"], grader="lexical", out_dir=tmp_path / "e", concurrency=2,
                    store=None)
    assert len(openai_server.requests) - before == 1 and rep2.counts["errors"] == 0
    assert {g["id"]: g for g in _lines(tmp_path / "e" / "grades.jsonl")}["q0"]["hit"]


def test_anthropic_and_openai_compatible_runners(built: Path, tmp_path: Path, anthropic_server,  # noqa: ANN001
                                                 openai_server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.base_url)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    anthropic_server.default = Reply.of_text("1. Random seed variance, since the paper reports the best run")
    openai_server.default = Reply.of_text("- <b>mixed precision</b> overflow")
    es = _small_set(built, tmp_path, 2)
    compat = f"openai-compatible:local-llama@{openai_server.base_url}"
    run_eval(es, models=["anthropic:claude-test", compat], grader="lexical", out_dir=tmp_path / "e",
             concurrency=2, store=None)
    assert len(anthropic_server.api_requests("/v1/messages")) == 2
    assert openai_server.api_requests("/v1/chat/completions")[0].model == "local-llama"
    res = json.loads((tmp_path / "e" / "results.json").read_text())
    assert set(res["models"]) == {"anthropic:claude-test", compat}
    html = (tmp_path / "e" / "report.html").read_text(encoding="utf-8")
    assert "<b>mixed" not in html and "&lt;b&gt;mixed precision&lt;/b&gt;" in html


def test_bad_model_specs_and_missing_keys(built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    for spec, msg in (("gpt4", "provider:MODEL"), ("baseline:magic", "unknown baseline"),
                      ("openai:gpt", "OPENAI_API_KEY"), ("openai-compatible:llama", "MODEL@"),
                      ("cohere:x", "unknown model provider")):
        with pytest.raises(UserError, match=msg):
            run_eval(built, models=[spec], grader="lexical", out_dir=tmp_path / "x", concurrency=1, store=None)


def test_grade_given_answers_and_agreement(built: Path, tmp_path: Path) -> None:
    items = load_eval_set(built)
    ans = tmp_path / "answers.jsonl"
    ans.write_text("".join(json.dumps({"id": it.id, "model": "human", "answer": f"1. {it.gold_root_cause}"}) + "\n"
                           for it in items) + json.dumps({"id": items[0].id, "model": "junk", "answer": "<script>"})
                   + "\n", encoding="utf-8")
    rep = run_grade(built, answers=ans, grader="lexical", out_dir=tmp_path / "g", agreement=None)
    res = json.loads((tmp_path / "g" / "results.json").read_text())
    assert res["models"]["human"]["overall"]["hit_at_1"] == 1.0
    assert rep.counts["answers"] == len(items) + 1
    assert "&lt;script&gt;" in (tmp_path / "g" / "report.html").read_text(encoding="utf-8")
    labels = Path(__file__).resolve().parents[2] / "eval_diagnosis" / "data" / "grader_labels.jsonl"
    rep = run_grade(None, answers=None, grader="lexical", out_dir=tmp_path / "g2", agreement=labels)
    agr = json.loads((tmp_path / "g2" / "agreement.json").read_text())
    assert agr["n"] >= 60 and 0 <= agr["accuracy"] <= 1 and "kappa" in agr
    with pytest.raises(UserError, match="--eval-set and --answers"):
        run_grade(None, answers=None, grader="lexical", out_dir=tmp_path / "g3", agreement=None)


def test_cli_eval_grade_and_bad_input(built: Path, tmp_path: Path, cli) -> None:  # noqa: ANN001
    proc = cli("eval", "--eval-set", str(built), "--model", "baseline:prior", "--model", "baseline:rules",
               "-o", str(tmp_path / "e"), workspace=tmp_path / "ws")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "e" / "results.json").exists() and (tmp_path / "e" / "report.html").exists()
    bad = tmp_path / "bad.jsonl"
    shutil.copy(built / "eval" / "test.parquet", tmp_path / "t.parquet")
    bad.write_text('{"id": "a", "error_type": "data", "gold_root_cause": "x"}\n{broken\n', encoding="utf-8")
    proc = cli("eval", "--eval-set", str(bad), "--model", "baseline:prior", "-o", str(tmp_path / "e2"))
    assert proc.returncode == 2 and "bad.jsonl:2" in proc.stderr and "Traceback" not in proc.stderr
    ans = tmp_path / "ans.jsonl"
    ans.write_text('{"id": "a", "answer": "1. x"}\n', encoding="utf-8")
    proc = cli("grade", "--eval-set", str(tmp_path / "t.parquet"), "--answers", str(ans), "-o", str(tmp_path / "g"))
    assert proc.returncode == 2 and "ans.jsonl:1" in proc.stderr and "model" in proc.stderr
    proc = cli("eval", "--eval-set", str(built), "--model", "openai:gpt-x", "-o", str(tmp_path / "e3"),
               env={"OPENAI_API_KEY": ""})
    assert proc.returncode == 2 and "OPENAI_API_KEY" in proc.stderr


def test_sigkill_mid_eval_then_rerun_matches_clean_run(tmp_path: Path, openai_server) -> None:  # noqa: ANN001
    import os
    import signal
    import subprocess
    import sys
    import threading

    es = tmp_path / "six.jsonl"
    es.write_text("".join(json.dumps({"id": f"k{i}", "error_type": "seed_hardware", "symptom": f"acc {60 + i}",
                                      "gold_root_cause": "seed variance across runs"}) + "\n" for i in range(6)),
                  encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPRODIAG_")}
    env.update({"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": openai_server.base_url})
    root = Path(__file__).resolve().parents[2]

    def cmd(out: Path) -> list[str]:
        return [sys.executable, "-m", "reprodiag", "-w", str(tmp_path / f"ws-{out.name}"), "eval", "--eval-set",
                str(es), "--model", "openai:m", "--concurrency", "1", "-o", str(out)]

    # the run is killed by the server itself when its third question arrives: two answers written, the third
    # in flight (one at a time, an answer is written before the next question is sent) -- at that moment,
    # however fast or loaded the machine
    started = threading.Event()
    child: list[subprocess.Popen[bytes]] = []
    asked = 0

    def responder(req):  # noqa: ANN001, ANN202
        nonlocal asked
        asked += 1
        if asked == 3:
            assert started.wait(120)
            os.kill(child[0].pid, signal.SIGKILL)
        return Reply.of_text("1. random seed variance")

    openai_server.responder = responder
    killed = tmp_path / "killed"
    child.append(subprocess.Popen(cmd(killed), env=env, cwd=root, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL))
    started.set()
    proc = child[0]
    assert proc.wait(timeout=300) == -signal.SIGKILL  # killed mid-eval, never finished
    done_before = len((killed / "answers.jsonl").read_text(encoding="utf-8").splitlines())
    assert done_before == 2
    before = len(openai_server.requests)
    assert subprocess.run(cmd(killed), env=env, cwd=root, capture_output=True, timeout=120).returncode == 0
    asked_again = len(openai_server.requests) - before
    assert asked_again == 6 - done_before  # the rest, the one in flight at the kill included, asked once more
    clean = tmp_path / "clean"
    assert subprocess.run(cmd(clean), env=env, cwd=root, capture_output=True, timeout=120).returncode == 0
    assert (killed / "results.json").read_text() == (clean / "results.json").read_text()
    assert (killed / "grades.jsonl").read_text() == (clean / "grades.jsonl").read_text()


@pytest.mark.parametrize("model", ["gpt-5-mini", "gpt-4o-mini"])
def test_eval_and_llm_judge_run_for_a_reasoning_and_an_older_model(built: Path, tmp_path: Path, openai_server,  # noqa: ANN001
                                                                   monkeypatch: pytest.MonkeyPatch, model: str) -> None:
    """The fake refuses max_tokens / temperature for gpt-5 models as the real API does: 0 errors either way."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)

    def reply(rec):  # noqa: ANN001, ANN202 - the judge gets keyed verdicts, the model a diagnosis
        if "Directions in the answer" in rec.prompt_text:
            return Reply.of_text('{"verdicts": [{"n": 1, "reasoning": "r", "match": true}]}')
        return Reply.of_text("1. Learning-rate warmup is too short")

    openai_server.responder = reply
    es = _small_set(built, tmp_path, 3)
    rep = run_eval(es, models=[f"openai:{model}"], grader=f"llm:openai:{model}", out_dir=tmp_path / "o",
                   concurrency=2, store=None)
    res = json.loads((tmp_path / "o" / "results.json").read_text())
    assert res["errors"][f"openai:{model}"] == 0 and rep.counts.get("errors", 0) == 0
    for r in openai_server.api_requests("/v1/chat/completions"):
        assert "max_tokens" not in r.json and ("temperature" in r.json) is (model == "gpt-4o-mini")


def test_eval_summary_says_which_parameters_a_model_refused(built: Path, tmp_path: Path, openai_server,  # noqa: ANN001
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import re

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    openai_server.reasoning_models = re.compile(r"^(?:o\d|gpt-5|novel)")
    openai_server.default = Reply.of_text("1. Learning-rate warmup is too short")
    rep = run_eval(_small_set(built, tmp_path, 2), models=["openai:novel-1"], grader="lexical",
                   out_dir=tmp_path / "o", concurrency=1, store=None)
    assert "dropped for novel-1: temperature" in " ".join(rep.notes)
    assert json.loads((tmp_path / "o" / "results.json").read_text())["errors"]["openai:novel-1"] == 0
