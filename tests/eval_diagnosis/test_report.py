"""The HTML report as a reader sees it: labelled axes with ticks, per-type bars with intervals and names that do
not run together, Markdown in gold causes rendered safely, empty fields left out, the grader's agreement; a
headless-browser screenshot when Chromium is installed."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from eval_diagnosis.graders.base import Grade
from eval_diagnosis.metrics import summarize
from eval_diagnosis.report import md_inline, render_html
from reprodiag.schema import ERROR_TYPES, EvalItem


def _results() -> tuple[dict, list[EvalItem], list[Grade], dict]:
    items = [EvalItem(id=f"i{k}", error_type=t, symptom=f"mAP 3{k}.0, paper 40.0",
                      tried="" if k % 2 else "default config",
                      gold_root_cause="The schedule is **800k** iterations, not `400k` <script>alert(1)</script>")
             for k, t in enumerate(ERROR_TYPES * 3)]
    grades = [Grade(id=it.id, model=m, hit=(k + j) % 2 == 0, hit_rank=1 if (k + j) % 2 == 0 else None)
              for k, it in enumerate(items) for j, m in enumerate(("baseline:prior", "openai:gpt-5-mini"))]
    models = summarize(grades, {it.id: it.error_type for it in items}, seed=0)
    results = {"grader": "lexical", "n_items": len(items), "models": models, "uncertain": 2,
               "grader_agreement": {"grader": "lexical", "measured": True, "n": 234, "accuracy": 0.902,
                                    "kappa": 0.8, "ci95": {"accuracy": [0.87, 0.93], "kappa": [0.73, 0.86]},
                                    "labels": "eval_diagnosis/data/answers_real/test.jsonl"}}
    answers = {(g.id, g.model): "1. <b>not bold</b> seed" for g in grades}
    return results, items, grades, answers


def test_markdown_is_rendered_safely() -> None:
    assert md_inline("uses **800k** and `lr=0.1` <img src=x onerror=alert(1)>") == (
        "uses <b>800k</b> and <code>lr=0.1</code> &lt;img src=x onerror=alert(1)&gt;")


def test_report_reads_well(tmp_path: Path) -> None:
    html = render_html(*_results())
    assert "<script>" not in html and "&lt;script&gt;" in html and "<b>800k</b>" in html
    assert "&lt;b&gt;not bold&lt;/b&gt;" in html  # model answers stay escaped
    assert "<b>Tried:</b> <br>" not in html and "<b>Tried:</b> default config" in html
    # per-type names are separate words, never glued ("hyperparameterdata")
    assert ">hyperparameter<" in html and ">seed<" in html and ">hardware<" in html
    assert "hyperparameterdata" not in re.sub(r"<[^>]+>", "", html.split("<h2>Hit rate per error type")[1][:20000])
    # both charts have a labelled scale with ticks; bars carry interval whiskers
    scatter = html.split("<h2>Hit rate vs false positives</h2>")[1]
    assert scatter.count(">50%<") >= 2 and "false-positive rate" in scatter and "hit rate (any)" in scatter
    bars = html.split("<h2>Hit rate per error type</h2>")[1].split("<h2>")[0]
    assert ">100%<" in bars and bars.count('stroke="#333"') >= 3 * len(ERROR_TYPES)
    assert "Cohen's kappa 0.80 [0.73, 0.86]" in html
    (tmp_path / "report.html").write_text(html, encoding="utf-8")


@pytest.mark.skipif(not (shutil.which("chromium") or shutil.which("chromium-browser")), reason="no Chromium")
def test_report_renders_in_a_headless_browser(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    page.write_text(render_html(*_results()), encoding="utf-8")
    shot = tmp_path / "report.png"
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    proc = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={shot}",
                           "--window-size=1200,1600", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 10_000, proc.stderr[-500:]
