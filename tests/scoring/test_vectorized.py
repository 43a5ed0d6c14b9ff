"""The scoring frame path: rules, versions, redaction parity with the Python redactor, the bench."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable

from reprodiag.redact import redact_record
from reprodiag.schema import ERROR_TYPES, Record
from scoring.bench import run_bench
from scoring.config import ScoreConfig
from scoring.pipeline import score_batch
from scoring.vectorized import (
    record_versions_frame,
    records_to_frame,
    redact_frame,
    score_frame,
    version_text_expr,
    versions_as_dicts,
    versions_frame,
)

GH = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
SNIPPETS = [
    "", "torch==1.{v}.0 and CUDA 10.2", "PyTorch 1.12, python3.8", "TF 1.x", "tensorflow-gpu 1.15 cuDNN 7.6.5",
    "torch 1.8.1+cu111", "@alice-w can you check", "ask bobmaint about it", "mail me at x.y@uni.edu",
    "see /home/jdoe/run and C:\\Users\\jdoe\\x", f"token={GH}", "api_token = 'Zx8Kq2LmP9vR4tW7nB3c'",
    "server 192.168.3.4, cuDNN 8.9.2.26", "@stranger and @alice-w.", "after upgrading torch the default changed",
    "It would be nice to add support for JAX", "pip install fails with no module named apex",
    "On Tue, Mar 3, 2020 at 10:00 AM Z <z@y.org> wrote:\n> quoted", "复现 指标对不上 İstanbul",
    # user-name edge cases: context around @, bare whole words, bots, placeholders, decorators, common words
    "git@github.com:owner/repo.git", "@model please check; the model and data are fine, ask bert",
    "Xu-Lab and xu-lab", "@Xu-Lab/repo and @XU-LAB", "@helper1. and @helper1.x", "a@@bob and @@", "@foo[bot]x",
    "@dependabot[bot] bump dependabot[bot]", "Hi, @xlm_author . xlm_author said @not_a_login", "mail email@helper1.org", "`@alice-w` and (@alice-w)",
    "helper1's fix, helper1helper1, helper1 helper1", "@user_0 hi maintainer_0 said", "@a--b @-x @ab- @ab_c",
    "cuDNN 8.9.2.26 at 10.1.2.3", "v1.2.3.4 host 10.0.0.7 and 1.2.3.4.5", "bobmaint/repo (bobmaint) .bobmaint",
    "bobmaint-x -bobmaint [bobmaint] bobmaint/", "@staticmethod @torch.no_grad() @jax @pytest.fixture",
    "@alice-w@bobmaint @bobmaint,@carol9", "İlker said @İlker", "transformers helper1@x ", "@", "x@",
    "@Stranger2 then @stranger2 and @other-one", "@alice-w's @bobmaint: thanks",
]
PARTICIPANTS = [
    ("alice-w", "asker"), ("bobmaint", "maintainer"), ("Xu-Lab", "maintainer"), ("helper1", "contributor"),
    ("model", "contributor"), ("data", "contributor"), ("bert", "contributor"), ("transformers", "contributor"),
    ("dependabot[bot]", "bot"), ("jax", "contributor"), ("İlker", "contributor"), ("maintainer_0", "maintainer"),
    ("a.b", "contributor"), ("HELPER1", "contributor"), ("carol9", "contributor"),
    ("xlm_author", "maintainer"),  # anonymised data: an underscore, not a valid GitHub login
]


def _sample(make_record: Callable[..., Record], n: int = 160) -> list[Record]:
    rng = random.Random(11)
    out = []
    for i in range(n):
        def pick() -> str:
            return rng.choice(SNIPPETS).format(v=rng.randrange(13))
        out.append(make_record(
            i, error_type=rng.choice([*ERROR_TYPES, "other"]), year=rng.randrange(2015, 2026),
            comments=rng.randrange(0, 6), reactions=rng.randrange(0, 8), referenced=rng.random() < 0.2,
            has_answer=rng.random() < 0.1, state=rng.choice(["open", "closed"]), is_resolved=rng.random() < 0.6,
            has_code_snippet=rng.random() < 0.5, bot_only=rng.random() < 0.05, is_reproduction=rng.random() < 0.9,
            labels=rng.choice([[], ["bug"], ["enhancement"], ["installation"]]),
            paper=rng.choice([None, 81.8]), obtained=rng.choice([None, 79.1]),
            resolution_type=rng.choice(["resolved", "unresolved", "unresolved_valuable"]),
            diagnostic_depth=rng.randrange(0, 6),
            problem_statement=f"{pick()} Record {i} {pick()}", environment=pick(), tried=pick(),
            root_cause=rng.choice([None, pick()]), resolution=rng.choice([None, pick()]),
            hypotheses=[pick() for _ in range(rng.randrange(0, 4))],
            participants=rng.sample(PARTICIPANTS, rng.randrange(0, 5)),
        ))
    return out


def test_score_batch_applies_the_frame_rules(make_record: Callable[..., Record]) -> None:
    """Every scored record carries exactly what score_frame decided for its row (no other rule path)."""
    recs = _sample(make_record)
    cfg = ScoreConfig(threshold=5, dedup=False)
    scored = score_batch(recs, cfg).records
    frame = score_frame(records_to_frame(recs), cfg).collect()
    for r, row in zip(scored, frame.iter_rows(named=True), strict=True):
        assert (r.quality.score, r.quality.drop_reason, r.quality.keep) == (row["score"], row["drop_reason"],
                                                                           row["keep"]), r.thread_id
        assert r.quality.components == {k: row[f"c_{k}"] for k in r.quality.components}
        assert (r.temporal_tag.tier, r.temporal_tag.weight, r.temporal_tag.still_relevant,
                r.temporal_tag.historical_value) == (row["tier"], row["weight"], row["still_relevant"],
                                                     row["historical_value"])
    assert {row["drop_reason"] for row in frame.iter_rows(named=True)} >= {
        None, "low_quality", "not_reproduction", "no_replies", "feature_request", "environment_setup",
        "temporal_filtered"}


def test_versions_field_by_field_equal_versions_of_the_joined_text(make_record: Callable[..., Record]) -> None:
    recs = _sample(make_record)
    df = records_to_frame(recs)
    vec = versions_as_dicts(versions_frame(version_text_expr(), df), len(recs))
    assert versions_as_dicts(record_versions_frame(df), len(recs)) == vec
    assert sum(1 for v in vec if v) > 40
    scored = score_batch(recs, ScoreConfig(dedup=False)).records
    assert [r.temporal_tag.framework_versions for r in scored] == vec


def test_redaction_identical(make_record: Callable[..., Record]) -> None:
    recs = _sample(make_record, 400)
    red, counts = redact_frame(records_to_frame(recs))
    total: Counter[str] = Counter()
    for i, r in enumerate(recs):
        rr, c = redact_record(r)
        total.update(c.by_kind)
        # the per-record walk also replaces the participants' logins (a placeholder login stays as it is)
        total["USER"] -= sum(1 for p in r.stats.participants if p.login != "maintainer_0")
        assert red["problem_statement"][i] == rr.problem_statement, r.thread_id
        assert red["hypotheses"][i].to_list() == [h.text for h in rr.hypothesis_chain], r.thread_id
        for f in ("root_cause", "resolution", "environment", "tried"):
            assert red[f][i] == getattr(rr, f), (r.thread_id, f)
    assert +counts == +total
    assert counts["GITHUB_TOKEN"] > 0 and counts["USER"] > 0 and counts["IP"] > 0
    assert GH not in str(red.to_dicts())


def test_bench_times_the_score_command_and_is_deterministic() -> None:
    first = run_bench(n=300, workspace=True)
    c = first.counts
    assert c["records"] == 300 and c["kept"] + c["dropped"] == 300 and c["redacted"] > 0
    for mode in ("round_trip", "file", "workspace"):
        assert c[f"{mode}_wall_ms"] > 0 and c[f"{mode}_peak_rss_mb"] > 0
    assert c["file_x_roundtrip"] > 0 and c["workspace_x_roundtrip"] > 0
    assert any(n.startswith("file: ") and "x round-trip" in n for n in first.notes)
    digest = [n for n in first.notes if n.startswith("digest ")]
    again = run_bench(n=300, workspace=False)
    assert digest == [n for n in again.notes if n.startswith("digest ")] and "workspace_wall_ms" not in again.counts
    other = run_bench(n=300, seed=1, workspace=False)
    assert [n for n in other.notes if n.startswith("digest ")] != digest


def test_the_environment_test_runs_the_regex_only_where_it_can_match() -> None:
    """Every text ENV_PATTERN matches holds one of ENV_NEEDLES (or a letter ``(?i)`` folds to ASCII), so the
    prefiltered test equals the plain regex: on the real records' problem statements and the corpus
    threads' bodies, and on planted variants (upper case, folded letters, needles without a match)."""
    import gzip
    import json
    import re
    from pathlib import Path

    import polars as pl

    from scoring.quality import ENV_NEEDLES, ENV_PATTERN
    from scoring.vectorized import contains_where

    root = Path(__file__).resolve().parents[2]
    texts = []
    with gzip.open(root / "scoring" / "data" / "real_records.jsonl.gz", "rt", encoding="utf-8") as fh:
        texts += [json.loads(line)["problem_statement"] for line in fh]
    for part in ("dev", "test"):
        with (root / "extract" / "data" / "real" / f"{part}.jsonl").open(encoding="utf-8") as fh:
            texts += [json.loads(line)["thread"]["body"] for line in fh]
    planted = ["PIP INSTALL -e .", "Pip Install failed", "No Module Named 'mmcv'", "ImportError: x", "ſetup.py build",
               "NVCC fatal", "libcudart.so.11", "failed to  install", "failed to install", "compile error here",
               "compilation failed", "installation failed", "DLL load failed", "Could not build wheels for x",
               "cannot import name", "undefined symbol: _ZN", "ModuleNotFoundError", "conda install pytorch",
               "Kompile", "installation", "pipinstall", "xpip install", "setup_py", "nvccc", "", "日本語 pip install"]
    texts += planted
    series = pl.Series(texts, dtype=pl.String)
    plain = series.str.contains(ENV_PATTERN).fill_null(False).to_list()
    assert sum(plain) > 25
    assert contains_where(series, ENV_PATTERN, ENV_NEEDLES).to_list() == plain
    rx = re.compile(ENV_PATTERN)
    assert [bool(rx.search(t)) for t in planted] == plain[-len(planted):]
