"""reprodiag build on a workspace that holds the threads: prompts carry only what the asker knew, names
become placeholders, golds are declarative, DPO rejected answers are real content, ``--eval-after`` splits
by time, and the build audits itself."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from reprodiag.build import parse_cutoff, run_build
from reprodiag.errors import UserError
from reprodiag.schema import (
    Comment,
    Hypothesis,
    Participant,
    Quality,
    Record,
    Symptom,
    TemporalTag,
    Thread,
    ThreadStats,
)
from reprodiag.store import Store
from tests.eval_diagnosis.corpus import LLM_READER

TYPES = ["hyperparameter", "data", "evaluation_protocol", "framework_version", "seed_hardware"]
CAUSES = {
    "hyperparameter": ("The learning rate was not scaled to the total batch of {n} images.", "mAP", 46.3, 43.9),
    "data": ("The tokenizer used a separate vocabulary per language instead of the joint {n}k BPE.", "BLEU", 27.6, 24.1),
    "evaluation_protocol": ("The paper number uses sliding-window inference with stride {n}.", "mIoU", 80.4, 78.1),
    "framework_version": ("PyTorch 1.{n} changed the grid_sample default to align_corners False.", "mIoU", 79.0, 77.2),
    "seed_hardware": ("Run-to-run variance of about 0.{n} points comes from nondeterministic atomics.", "FID", 3.2, 3.9),
}


def _when(month: int) -> datetime:
    return datetime(2024, month, 3, tzinfo=UTC)


#: Clauses of varying length, so that texts vary in length the way real ones do.
DETAIL = ["", " in the released config", " when training on {n} GPUs with the default schedule",
          " (see the comment in the README)", " for the base model only"]


def _cause(etype: str, k: int) -> str:
    return CAUSES[etype][0].replace(".", DETAIL[(k * 7) % 5] + ".", 1).replace("{n}", str(k))


def _values(etype: str, k: int) -> tuple[str, float, float]:
    """(metric, paper value, obtained value): each thread reports its own numbers, as real ones do."""
    _c, metric, paper, got = CAUSES[etype]
    return metric, paper, round(got + (k % 23) * 0.1 - 1.1, 1)


def _thread(repo: str, n: int, etype: str, month: int, k: int) -> Thread:
    metric, paper, got = _values(etype, k)
    cause = _cause(etype, k)
    body = (f"<!-- Please fill in the template -->\nHi Li Wei,\n\nI get {metric} {got} on the val set but the paper "
            f"reports {paper}. I used the default config. ![plot](https://x/y.png)\n\nBest regards,\nAnna")
    if n == 2:  # the asker pasted the maintainer's e-mail answer (with the cause) into the body
        body += (f"\n\nOn Mon, Jan 8, 2024 at 10:00 AM Li Wei <li@example.org> wrote:\n> {cause}\n"
                 f"> The paper reports {paper + 1.0}.")
    return Thread(
        repo=repo, number=n, kind="issue", title=f"{metric} {got} vs {paper} in the paper", body=body,
        author="anna-k", state="closed", created_at=_when(month), updated_at=_when(month),
        comments=[Comment(id=f"{repo}-{n}-c1", author="li-wei-ml", author_association="OWNER",
                          body=f"Hi Anna, {cause}", created_at=_when(month)),
                  Comment(id=f"{repo}-{n}-c2", author="anna-k", body="Thanks @li-wei-ml, that fixed it.",
                          created_at=_when(month))])


def _record(t: Thread, etype: str, i: int, k: int) -> Record:
    metric, paper, got = _values(etype, k)
    cause = _cause(etype, k)
    hyps = [Hypothesis(text=f"Could be seed variance across the {k + 2} runs?", comment_id="c1", outcome="untested"),
            Hypothesis(text="- That adds ~15% more training data.", comment_id="c1", outcome="confirmed")]
    if i % 2:
        hyps.insert(0, Hypothesis(text=f"The warmup of {k}00 steps is too short{DETAIL[(k * 3) % 5]}.".replace(
                                  "{n}", str(k)),
                                  comment_id="c1", outcome="refuted"))
    return Record(
        thread_id=t.id, repo=t.repo, error_type=etype,  # type: ignore[arg-type]
        problem_statement=f"{t.title} — {t.title}", tried="The paper reports 99.0 after the fix.",
        symptom=Symptom(metric=metric, paper_value=paper + 1.0 if t.number == 2 else paper, obtained_value=got),
        hypothesis_chain=hyps,
        root_cause=("Hi Anna, " + cause) if t.number != 3 else "Did you use speed perturbation?",
        resolution=cause, is_resolved=True, resolution_type="resolved",
        temporal_tag=TemporalTag(created_year=2024, tier="current", weight=1.0),
        quality=Quality(score=6, keep=True), split="train", extractor=LLM_READER,
        stats=ThreadStats(created_at=t.created_at, participants=[Participant(login="anna-k", role="asker"),
                                                                 Participant(login="li-wei-ml", role="maintainer")]))


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("rows") / "ws"
    threads, records = [], []
    for i in range(30):
        etype = TYPES[i % 5]
        repo = f"lab{i:02d}/p{i:02d}"
        for n in (1, 2, 3):
            t = _thread(repo, n, etype, month=1 + (i % 12), k=i * 3 + n)
            threads.append(t)
            records.append(_record(t, etype, i + n, k=i * 3 + n))
    with Store(root) as s:
        s.upsert_threads(threads)
        s.put_scored(records)
    return root


@pytest.fixture(scope="module")
def built(ws: Path) -> Path:
    out = ws.parent / "out"
    with Store(ws) as s:
        run_build(s, out, per_type_min=2, per_type_max=4, seed=0, push_to_hub=None)
    return out


def _rows(out: Path, name: str) -> list[dict]:
    return [r for f in sorted((out / name).glob("*.parquet")) for r in pl.read_parquet(f).to_dicts()]


def _texts(out: Path) -> str:
    return "\n".join(json.dumps(r, ensure_ascii=False) for n in ("sft", "dpo", "eval") for r in _rows(out, n))


def test_prompt_holds_only_what_the_asker_wrote_before_any_reply(built: Path) -> None:
    sft = _rows(built, "sft")
    assert sft
    for r in sft:
        user = r["messages"][1]["content"]
        assert "wrote:" not in user and "example.org" not in user and "<!--" not in user and "![plot]" not in user
        assert "99.0" not in user  # a "tried" sentence the asker never wrote
        for ln in r["messages"][2]["content"].splitlines():
            if ln.startswith("Root cause:"):  # the e-mail quote held the cause; the prompt does not
                assert ln.split(": ", 1)[1] not in user
    by_n = {int(r["thread_id"].rsplit("#", 1)[1]): r for r in sft}
    if 2 in by_n:  # the quoted reply's paper value (paper + 1) is not shown: it was not the asker's
        assert "paper reports" not in by_n[2]["messages"][1]["content"].splitlines()[1] or \
            "gap" not in by_n[2]["messages"][1]["content"].splitlines()[1]


def test_title_is_not_repeated_and_bodies_end_on_a_sentence(built: Path) -> None:
    for r in _rows(built, "sft"):
        user = r["messages"][1]["content"]
        title = user.splitlines()[3] if len(user.splitlines()) > 3 else ""
        assert " — " not in user
        assert user.count(title) == 1 if title else True
        report = user.rsplit("\n\n", 1)[0]
        assert not report.rstrip().endswith(":")


def test_names_become_role_placeholders_everywhere(built: Path) -> None:
    text = _texts(built)
    for name in ("Li Wei", "Anna", "anna-k", "li-wei-ml"):
        assert name not in text, name
    assert "maintainer_0" in text  # the asker's greeting addressed the maintainer
    audit = json.loads((built / "audit.json").read_text(encoding="utf-8"))
    assert audit["checks"]["participants_checked"] and audit["checks"]["pii_rows"] == 0


def test_answers_are_complete_sentences(built: Path) -> None:
    for r in _rows(built, "sft"):
        a = r["messages"][2]["content"]
        assert "?" not in a and "That adds" not in a and "Hi " not in a
        assert "It could be seed variance across the " in a  # the question became a statement
        for ln in a.splitlines():
            assert not ln.strip() or ln.rstrip().endswith((".", "`", ")")), ln


def test_eval_golds_are_declarative_and_questions_are_counted(built: Path) -> None:
    items = _rows(built, "eval")
    assert items
    assert all(not i["gold_root_cause"].endswith("?") and not i["gold_root_cause"].startswith("Hi") for i in items)
    card = (built / "README.md").read_text(encoding="utf-8")
    assert "| eval: gold root cause not a declarative cause |" in card
    assert "no public repository URL in the package metadata" in card and "https://github.com/)" not in card


def test_dpo_rejected_answers_are_real_content_without_shortcuts(built: Path) -> None:
    pairs = _rows(built, "dpo")
    assert pairs
    sources = Counter(p["rejected_source"] for p in pairs)
    assert set(sources) == {"refuted_hypothesis", "other_thread"}, sources
    rejected = Counter(p["rejected"][0]["content"] for p in pairs)
    assert max(rejected.values()) <= 2
    for p in pairs:
        c, x = p["chosen"][0]["content"], p["rejected"][0]["content"]
        assert "Fix:" not in c and "Fix:" not in x
        if p["rejected_source"] == "refuted_hypothesis":  # the swap: the refuted claim stated as the cause
            assert "Root cause: The warmup of" in x and "The warmup of" in c.split("Root cause:")[0]
            if "Root cause:" in c:  # ... and the true cause ruled out in its place
                true = c.split("Root cause: ")[1].splitlines()[0].rstrip(".")
                assert true in x.split("Root cause:")[0]
        else:  # another thread's cause of another type, adapted: the gap sentence (if any) is this thread's
            if " came out at " in c.splitlines()[0]:
                assert x.splitlines()[0] == c.splitlines()[0]
            assert x.split("Root cause:")[-1] != c.split("Root cause:")[-1]
        assert c.count("\n") == x.count("\n")  # the same shape
    audit = json.loads((built / "audit.json").read_text(encoding="utf-8"))
    assert audit["checks"]["shortcut_accuracy"] <= 0.65
    assert 0.8 <= audit["checks"]["length_ratio_median"] <= audit["checks"]["length_ratio_median_max"] <= 1.25
    assert audit["failed"] == [], audit["checks"]


def test_eval_after_puts_later_threads_in_eval_only(ws: Path, tmp_path: Path) -> None:
    cut = parse_cutoff("2024-06-30")
    with Store(ws) as s:
        rep = run_build(s, tmp_path / "t", per_type_min=1, per_type_max=10, seed=0, push_to_hub=None,
                        eval_after=cut)
        created = {t.id: t.created_at for t in s.iter_threads()}
    items = _rows(tmp_path / "t", "eval")
    assert items and all(created[i["source_thread"]] > cut for i in items)
    train = _rows(tmp_path / "t", "sft") + _rows(tmp_path / "t", "dpo")
    assert train and all(created[r["thread_id"]] <= cut for r in train)
    card = (tmp_path / "t" / "README.md").read_text(encoding="utf-8")
    assert "threads created after 2024-06-30T23:59:59+00:00 are in `eval` only" in card
    assert rep.counts["left out (training: created after the eval cut-off)"] > 0


def test_bad_cutoff_is_one_clear_error(ws: Path, cli) -> None:  # noqa: ANN001
    with pytest.raises(UserError, match="--eval-after"):
        parse_cutoff("last tuesday")
    proc = cli("build", "-o", str(ws.parent / "bad"), "--eval-after", "2024-13-45", workspace=ws)
    assert proc.returncode == 2 and "--eval-after" in proc.stderr and "Traceback" not in proc.stderr
    assert not (ws.parent / "bad").exists()
