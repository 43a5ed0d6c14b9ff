"""reprodiag build: SFT/DPO/eval datasets from a hand-made workspace."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
from datasets import load_from_disk

from reprodiag.build import (
    RowSource,
    carve_eval,
    diagnosis_of,
    dpo_eligible,
    eval_eligible,
    run_build,
    shown_symptom,
)
from reprodiag.errors import UserError
from reprodiag.schema import ERROR_TYPES, EvalItem, Hypothesis
from reprodiag.store import Store
from tests.eval_diagnosis.corpus import SECRET, make_records, make_workspace


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_workspace(tmp_path_factory.mktemp("build"))


@pytest.fixture(scope="module")
def out(ws: Path) -> Path:
    target = ws.parent / "out"
    with Store(ws) as s:
        report = run_build(s, target, per_type_min=2, per_type_max=4, seed=0, push_to_hub=None)
    assert report.counts["kept (score)"] == 45
    return target


def _repos(ds: object) -> set[str]:
    return {r for split in ds.values() for r in split["repo"]}  # type: ignore[attr-defined]


def test_sft_is_trl_conversational(out: Path) -> None:
    sft = load_from_disk(str(out / "sft"))
    assert "train" in sft and sft["train"].num_rows > 0
    for split in sft.values():
        for row in split:
            roles = [m["role"] for m in row["messages"]]
            assert roles == ["system", "user", "assistant"]
            assert all(m["content"].strip() for m in row["messages"])
            assert row["error_type"] in (*ERROR_TYPES, "other")
            assert 0 < row["weight"] <= 1
            assert isinstance(row["verified"], bool)
            assert row["thread_id"].startswith(row["repo"] + "#")
    rows = [r for s in sft.values() for r in s]
    assert {r["tier"] for r in rows} <= {"current", "historical"}
    assert any(r["weight"] < 1 for r in rows if r["tier"] == "historical")
    assert any("Root cause:" in r["messages"][2]["content"] for r in rows)
    assert any(r["resolution_type"] == "unresolved_valuable" for r in rows)


def test_dpo_pairs_are_valid(out: Path) -> None:
    dpo = load_from_disk(str(out / "dpo"))
    rows = [r for s in dpo.values() for r in s]
    assert rows
    for r in rows:
        assert [m["role"] for m in r["prompt"]] == ["system", "user"]
        assert [m["role"] for m in r["chosen"]] == ["assistant"] == [m["role"] for m in r["rejected"]]
        assert r["chosen"][0]["content"] != r["rejected"][0]["content"]
    assert {r["rejected_source"] for r in rows} <= {"refuted_hypothesis", "other_thread"}
    assert max(Counter(r["rejected"][0]["content"] for r in rows).values()) <= 2


def _src(rec) -> RowSource:  # noqa: ANN001
    return RowSource(record=rec, view=None, shown=shown_symptom(rec, None))


def test_dpo_needs_a_refuted_claim_or_a_confirmed_cause() -> None:
    rec = make_records(1)[0].model_copy(update={
        "is_resolved": False, "resolution_type": "unresolved_valuable", "root_cause": None,
        "hypothesis_chain": [Hypothesis(text="maybe the warmup is short", outcome="untested")]})
    assert not dpo_eligible(_src(rec), diagnosis_of(_src(rec)))
    asked = rec.model_copy(update={"hypothesis_chain": [Hypothesis(text="Did you fix the seed?", outcome="refuted")]})
    assert not dpo_eligible(_src(asked), diagnosis_of(_src(asked)))  # a question is no claim to swap in
    claimed = rec.model_copy(update={"hypothesis_chain": [Hypothesis(text="The seed explains the gap.",
                                                                     outcome="refuted")]})
    assert not dpo_eligible(_src(claimed), diagnosis_of(_src(claimed)))  # no cause: nothing to prefer
    hedged = claimed.model_copy(update={"root_cause": "The warmup is too short for 4 GPUs."})
    assert dpo_eligible(_src(hedged), diagnosis_of(_src(hedged)))  # a likely cause and a refuted claim
    resolved = make_records(1)[0].model_copy(update={"hypothesis_chain": []})
    assert dpo_eligible(_src(resolved), diagnosis_of(_src(resolved)))


def test_eval_items_and_repository_disjointness(out: Path) -> None:
    ev = load_from_disk(str(out / "eval"))
    assert list(ev) == ["test"]
    items = [EvalItem.model_validate(r) for r in ev["test"]]
    assert items and len({i.id for i in items}) == len(items)
    per_type = Counter(i.error_type for i in items)
    assert all(n <= 4 for n in per_type.values())
    assert all(per_type[t] >= 2 for t in ERROR_TYPES), per_type
    for i in items:
        assert i.gold_root_cause and i.acceptable_directions and i.question and i.symptom
    eval_repos = {i.source_thread.split("#")[0] for i in items}
    train_repos = _repos(load_from_disk(str(out / "sft"))) | _repos(load_from_disk(str(out / "dpo")))
    assert eval_repos and train_repos
    assert not eval_repos & train_repos


def test_parquet_matches_saved_datasets(out: Path) -> None:
    for name in ("sft", "dpo", "eval"):
        dd = load_from_disk(str(out / name))
        for split, ds in dd.items():
            df = pl.read_parquet(out / name / f"{split}.parquet")
            assert df.height == ds.num_rows
            assert set(df.columns) == set(ds.column_names)


def test_card_reports_this_runs_funnel(out: Path) -> None:
    card = (out / "README.md").read_text(encoding="utf-8")
    assert card.startswith("---\n")
    header = card.split("---")[1]
    for key in ("license:", "task_categories:", "pretty_name:", "configs:", "path: sft/train.parquet",
                "path: eval/test.parquet"):
        assert key in header
    sft_n = sum(ds.num_rows for ds in load_from_disk(str(out / "sft")).values())
    assert "| kept (score) | 45 |" in card
    assert f"| sft rows | {sft_n} |" in card
    assert "GitHub Terms of Service" in card and "historical" in card
    # the card names the reader of every split and what it was measured to do
    assert "records by extractor: openai: " in card
    assert "## Who read the threads" in card and "| eval | llm: " in card and "| sft | llm: " in card
    assert "openai:gpt-test" in card and "LLM reader (prompt extract-v3" in card
    assert "- offline reader (" not in card  # no offline record in this build, so no offline figures
    assert "Eval items come from LLM-read records only" in card


def test_every_configuration_loads_by_name_as_on_disk(out: Path, tmp_path: Path) -> None:
    """``load_dataset(OUT, NAME)`` (the card's ``configs:``, the hub's convention) and ``load_from_disk(OUT / NAME)``
    give the same rows; the SFT mixes are subsets of ``sft`` holding the resolution types they name."""
    from datasets import disable_progress_bars, load_dataset

    from reprodiag.mixes import CONFIGS, mix_named, unresolved_cap

    disable_progress_bars()
    header = (out / "README.md").read_text(encoding="utf-8").split("---")[1]
    sft = load_from_disk(str(out / "sft"))
    for name in CONFIGS:
        assert f"- config_name: {name}\n" in header
        by_name = load_dataset(str(out), name, cache_dir=str(tmp_path / "cache"))
        on_disk = load_from_disk(str(out / name))
        assert list(by_name) == list(on_disk), name
        for split in on_disk:
            assert by_name[split].to_list() == on_disk[split].to_list(), (name, split)
        mix = mix_named(name)
        if mix.source == "sft":
            assert list(on_disk) == list(sft)
            for split, ds in on_disk.items():
                assert set(ds["thread_id"]) <= set(sft[split]["thread_id"])
                assert mix.resolution is None or set(ds["resolution_type"]) <= set(mix.resolution)
                assert ds.features == sft[split].features  # weight included: a per-sample loss weight
    full = {s: Counter(ds["resolution_type"]) for s, ds in load_from_disk(str(out / "sft_full")).items()}
    assert sum(c["resolved"] for c in full.values()) and sum(c["unresolved_valuable"] for c in full.values())
    assert all(c["unresolved_valuable"] <= unresolved_cap(c["resolved"]) for c in full.values())  # the target mix
    resolved = [r for ds in load_from_disk(str(out / "sft_resolved")).values() for r in ds["resolution_type"]]
    assert resolved and set(resolved) == {"resolved"}
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "## Training mixes and the proposal's experiment" in card
    assert "| + resolved threads | `sft_resolved` |" in card and "| baseline | nothing" in card
    assert "| + DPO | `sft_full`, then `dpo` |" in card and "not measurements" in card
    assert json.loads((out / "audit.json").read_text())["checks"]["mix_rows_wrong"] == 0


def test_no_secret_or_login_in_any_output(out: Path) -> None:
    for f in out.rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            assert SECRET.encode() not in data, f
            assert b"alice-asker" not in data, f


def test_filtered_tier_and_dropped_records_excluded(out: Path) -> None:
    sft = load_from_disk(str(out / "sft"))
    ids = {t for s in sft.values() for t in s["thread_id"]}
    assert "lab01/paper-01#3" not in ids  # filtered tier
    assert "lab00/paper-00#99" not in ids  # dropped by scoring


def test_rebuild_replaces_atomically_and_is_deterministic(ws: Path, tmp_path: Path) -> None:
    target = tmp_path / "o"
    with Store(ws) as s:
        run_build(s, target, per_type_min=2, per_type_max=4, seed=3, push_to_hub=None)
        first = {p.relative_to(target): pl.read_parquet(p) for p in target.rglob("*.parquet")}
        (target / "stale.txt").write_text("x")
        (tmp_path / ".o.building-999").mkdir()  # left over by a killed build
        run_build(s, target, per_type_min=2, per_type_max=4, seed=3, push_to_hub=None)
    assert not (target / "stale.txt").exists()
    assert not list(tmp_path.glob(".o.*"))
    second = {p.relative_to(target): pl.read_parquet(p) for p in target.rglob("*.parquet")}
    assert first.keys() == second.keys()
    for k in first:
        assert first[k].equals(second[k]), k


def test_refuses_to_replace_foreign_directory(ws: Path, tmp_path: Path) -> None:
    target = tmp_path / "mine"
    target.mkdir()
    (target / "thesis.tex").write_text("precious")
    with Store(ws) as s, pytest.raises(UserError, match="not a previous reprodiag build"):
        run_build(s, target, per_type_min=1, per_type_max=2, seed=0, push_to_hub=None)
    assert (target / "thesis.tex").read_text() == "precious"


def test_push_to_hub_needs_token(ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with Store(ws) as s, pytest.raises(UserError, match="HF_TOKEN"):
        run_build(s, tmp_path / "x", per_type_min=1, per_type_max=2, seed=0, push_to_hub="org/name")
    assert not (tmp_path / "x").exists()


def test_small_corpus_takes_what_exists_and_says_so(ws: Path, tmp_path: Path) -> None:
    with Store(ws) as s:
        rep = run_build(s, tmp_path / "o", per_type_min=20, per_type_max=40, seed=0, push_to_hub=None)
    assert any("small corpus" in n for n in rep.notes)
    assert "Small corpus" in (tmp_path / "o" / "README.md").read_text(encoding="utf-8")
    assert rep.counts["sft rows"] > 0  # eval never swallows the whole corpus


def test_carve_eval_limits_and_disjointness() -> None:
    recs = make_records(15)
    carve = carve_eval(recs, per_type_min=1, per_type_max=2, seed=1)
    assert {r.repo for r in carve.eval_records} <= carve.eval_repos
    assert not carve.eval_repos & {r.repo for r in carve.train_records}
    assert len(carve.train_records) + len(carve.eval_records) + len(carve.held_out) == len(recs)
    assert all(eval_eligible(r) for r in carve.eval_records)
    assert max(Counter(r.error_type for r in carve.eval_records).values()) <= 2
    assert not carve.shortfall


def test_cli_build_and_bad_flags(ws: Path, tmp_path: Path, cli) -> None:  # noqa: ANN001
    proc = cli("build", "-o", str(tmp_path / "cli-out"), "--per-type-min", "1", "--per-type-max", "3",
               workspace=ws)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "cli-out" / "eval" / "test.parquet").exists()
    bad = cli("build", "-o", str(tmp_path / "b"), "--per-type-min", "5", "--per-type-max", "2", workspace=ws)
    assert bad.returncode == 2 and "per-type-min" in bad.stderr
    assert "Traceback" not in bad.stderr
    rep = json.loads(cli("-q", "build", "-o", str(tmp_path / "cli-out"), workspace=ws).stdout)
    assert rep["stage"] == "build"


def test_empty_workspace_builds_empty_datasets(store: Store, tmp_path: Path) -> None:
    rep = run_build(store, tmp_path / "e", per_type_min=1, per_type_max=2, seed=0, push_to_hub=None)
    assert rep.counts["sft rows"] == rep.counts["eval items"] == 0
    sft = load_from_disk(str(tmp_path / "e" / "sft"))
    assert sft["train"].num_rows == 0 and "messages" in sft["train"].column_names


def _diag_record(resolution_type: str):  # noqa: ANN202
    from reprodiag.schema import Hypothesis, Record, Symptom

    resolved = resolution_type == "resolved"
    return Record(
        thread_id="o/r#1", repo="o/r", error_type="evaluation_protocol", resolution_type=resolution_type,
        is_resolved=resolved,
        symptom=Symptom(metric="BLEU", paper_value=32.7, obtained_value=28.4, gap=-4.3),
        hypothesis_chain=[Hypothesis(text="Maybe the learning rate is too low?", outcome="refuted",
                                     basis="Doubling the learning rate left BLEU at 28.5."),
                          Hypothesis(text="Did you use detokenized sacreBLEU?", outcome="confirmed",
                                     basis="Scoring the same output with multi-bleu.perl gave 32.5."),
                          Hypothesis(text="Check the beam size.", outcome="untested")],
        root_cause="The paper reports tokenized BLEU from multi-bleu.perl.",
        resolution="Score with multi-bleu.perl on tokenized output.",
        verification="The asker rescored with multi-bleu.perl and got 32.5." if resolved else None,
        open_questions=[] if resolved else ["Whether the beam size of 4 matches the paper's."])


def test_diagnosis_text_orders_reasoning_and_hedges_unconfirmed_causes():
    from reprodiag.build import diagnosis_text, render
    from reprodiag.pairs import swapped

    src = _src(_diag_record("resolved"))
    text = diagnosis_text(src)
    # an expert's order: the gap as measured, the hypotheses with what ruled them in or out, the cause, how it
    # was verified, the fix
    order = [text.index(k) for k in ("BLEU came out at 28.4 against the paper's 32.7, 4.3 below it.",
                                     "It may be that the learning rate is too low", "doubling the learning rate",
                                     "It was asked whether you used detokenized sacreBLEU", "gave 32.5",
                                     "Check the beam size", "Root cause: The paper reports tokenized BLEU",
                                     "Verified: The asker rescored", "Fix: Score with multi-bleu.perl")]
    assert order == sorted(order)
    assert "- " not in text and "How to verify" not in text and "This looks like" not in text  # prose, no form
    hedged = diagnosis_text(_src(_diag_record("unresolved_valuable")))
    assert "Most likely cause, not confirmed in the thread: The paper reports" in hedged
    assert "Root cause:" not in hedged and "Verified:" not in hedged
    assert "Still open: Whether the beam size of 4 matches the paper's." in hedged
    d = diagnosis_of(src)
    assert d is not None and not d.claims  # the refuted hypothesis was a question: not swappable
    claimed = _diag_record("resolved").model_copy(update={"hypothesis_chain": [
        Hypothesis(text="The learning rate is too low for 4 GPUs.", outcome="refuted")]})
    d = diagnosis_of(_src(claimed))
    sw = swapped(d)
    assert sw is not None and sw.cause == "The learning rate is too low for 4 GPUs."
    assert sw.refuted == ("The paper reports tokenized BLEU from multi-bleu.perl.",)
    rej, cho = render(sw, with_fix=False, short=True), render(d, with_fix=False, short=True)
    assert 0.8 <= len(cho) / len(rej) <= 1.25 and rej != cho
    assert cho.count("\n") == rej.count("\n")  # the same shape: the pair differs in the diagnosis


def test_an_offline_record_says_less_rather_than_pad():
    from reprodiag.build import diagnosis_text
    from reprodiag.schema import Record, Symptom

    bare = Record(thread_id="o/r#2", repo="o/r", error_type="data", resolution_type="resolved", is_resolved=True,
                  symptom=Symptom(metric=None), root_cause="The validation split was used instead of test.")
    assert diagnosis_text(_src(bare)) == "Root cause: The validation split was used instead of test."


def _offline_workspace(root: Path, llm_repos: int = 0) -> Path:
    """The hand-made workspace with its records read by the offline reader, except those of the first
    ``llm_repos`` repositories."""
    from reprodiag.schema import ExtractorInfo

    ws = make_workspace(root)
    with Store(ws) as s:
        recs = list(s.iter_scored())
        repos = sorted({r.repo for r in recs})[:llm_repos]
        s.put_scored([r if r.repo in repos else r.model_copy(update={"extractor": ExtractorInfo(backend="rules")})
                      for r in recs])
    return ws


def test_offline_records_become_eval_items_only_when_asked(tmp_path: Path) -> None:
    ws = _offline_workspace(tmp_path)
    with Store(ws) as s:
        rep = run_build(s, tmp_path / "llm-only", per_type_min=2, per_type_max=4, seed=0, push_to_hub=None)
        asked = run_build(s, tmp_path / "asked", per_type_min=2, per_type_max=4, seed=0, push_to_hub=None,
                          eval_from="offline")
    assert rep.counts["eval items"] == 0 and rep.counts["sft rows"] > 0  # training rows stay possible
    assert rep.counts["left out (eval: read by the offline reader (build --eval-from offline takes it))"] > 0
    card = (tmp_path / "llm-only" / "README.md").read_text(encoding="utf-8")
    assert "| sft | offline: " in card and "offline reader (rules and learned models" in card
    assert asked.counts["eval items"] > 0
    card = (tmp_path / "asked" / "README.md").read_text(encoding="utf-8")
    n = asked.counts["eval items"]
    assert f"| eval | offline: {n} |" in card and f"**{n} eval item(s) come from the offline reader**" in card
    from extract.measured import OFFLINE

    assert f"eval_sound {OFFLINE.eval_sound:.2f}" in card  # the offline reader's measured figure, where its items are


def test_in_a_mixed_workspace_eval_items_come_from_the_llm_reader(tmp_path: Path) -> None:
    ws = _offline_workspace(tmp_path, llm_repos=8)
    with Store(ws) as s:
        llm_threads = {r.thread_id for r in s.iter_scored() if r.extractor.backend != "rules"}
        rep = run_build(s, tmp_path / "mixed", per_type_min=1, per_type_max=4, seed=0, push_to_hub=None)
    items = load_from_disk(str(tmp_path / "mixed" / "eval"))["test"]
    assert rep.counts["eval items"] == items.num_rows > 0
    assert set(items["source_thread"]) <= llm_threads
    card = (tmp_path / "mixed" / "README.md").read_text(encoding="utf-8")
    assert "LLM reader (prompt" in card and "offline reader (rules" in card  # both readers' figures


def test_cli_rejects_an_unknown_eval_source(ws: Path, tmp_path: Path, cli) -> None:  # noqa: ANN001
    r = cli("build", "-o", str(tmp_path / "x"), "--eval-from", "everything", workspace=ws)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "eval-from" in r.stderr
    assert not (tmp_path / "x").exists()
