from __future__ import annotations

import pytest

from extract.relevance import classify
from tests.extract.threads import NEGATIVE, POSITIVE, REPLY, make_thread


@pytest.mark.parametrize(("title", "body"), POSITIVE)
def test_reproduction_threads_are_kept(title: str, body: str) -> None:
    d = classify([make_thread(title, body, REPLY)])[0]
    assert d.is_reproduction, d.signals
    assert d.thread_id == "lab/model#1" and 0.5 < d.score <= 1


@pytest.mark.parametrize(("title", "body"), NEGATIVE)
def test_bug_reports_and_help_requests_are_dropped(title: str, body: str) -> None:
    d = classify([make_thread(title, body, REPLY)])[0]
    assert not d.is_reproduction, d.signals


def test_no_reply_keeps_the_content_decision_and_is_signalled_bots_do_not_count() -> None:
    """is_reproduction is about content (SPEC); a thread nobody answered is marked ``no_reply`` (the extract
    stage skips it and scoring drops it) but stays a reproduction."""
    title, body = POSITIVE[0]
    bot = [("github-actions[bot]", "NONE", "This issue has been automatically marked as stale.")]
    replied = classify([make_thread(title, body, REPLY)])[0]
    assert replied.is_reproduction and "no_reply" not in replied.signals
    for comments in (None, bot):
        d = classify([make_thread(title, body, comments)])[0]
        assert d.is_reproduction and "no_reply" in d.signals
        assert "repro_intent" in d.signals  # the content signal is still recorded


def test_order_and_ids_follow_input() -> None:
    threads = [make_thread(t, b, REPLY, number=i) for i, (t, b) in enumerate(POSITIVE[:2] + NEGATIVE[:2])]
    got = classify(threads)
    assert [d.thread_id for d in got] == [t.id for t in threads]
    assert [d.is_reproduction for d in got] == [True, True, False, False]


def test_prefilter_never_changes_the_signals(sample_threads) -> None:  # noqa: ANN001
    from extract.bench import DEFAULT_DEV_SET, load_dev_set
    from extract.signals import signals

    threads = [t for t, _, _ in load_dev_set(DEFAULT_DEV_SET)] + list(sample_threads)
    threads += [make_thread(t, b, REPLY) for t, b in POSITIVE + NEGATIVE]
    for t in threads:
        assert signals(t).names == signals(t, prefilter=False).names, t.id


def test_fast_number_searches_give_the_same_answer_as_the_full_patterns(sample_threads) -> None:  # noqa: ANN001
    """The lower-cased / split searches the signals use decide exactly like the case-insensitive patterns,
    on every real thread, the sample and crafted acronym cases (EM written as is vs "em" in prose)."""
    from extract import signals as R
    from extract.realcorpus import load_real

    texts = [R._window(r.thread)[0] for r in load_real("all")] + [R._window(t)[0] for t in sample_threads]
    texts += ["EM 71.2 on dev", "em 71.2 on dev", "I got 40.1 WER", "we get 40.1 wer", "mAP 43.9 vs 46.3 paper",
              "论文中是 80.1", "İSTANBUL IS 12.5"]
    for text in texts:
        low = text.lower()
        assert bool(R._METRIC_NUM.search(text)) == bool(R._METRIC_NUM_LOW.search(low) or R._METRIC_NUM_CS.search(text))
        assert bool(R._PAIR.search(text)) == bool(R._PAIR_LOW.search(low)), text


@pytest.mark.parametrize("body", [
    "Table 1 lists 42.0 AP but the other paper reports 43.3. I haven't run anything, just want to cite it.",
    "README says 0.1545 while the paper's Table 2 says 0.1554, probably a typo in the README. Not trying to "
    "reproduce anything.",
])
def test_questions_without_an_own_run_are_dropped(body: str) -> None:
    assert not classify([make_thread("Number in your table differs from the paper?", body, REPLY)])[0].is_reproduction


COLLECT_ENV = ("<details><summary>collect_env</summary>\n\n```\nPyTorch version: 2.0.1+cu118\nCUDA used to build "
               "PyTorch: 11.8\nGPU 0: NVIDIA RTX A5000\n```\n</details>\n\n")


@pytest.mark.parametrize(("title", "body"), [
    ("[Bug] accuracy lower than README", "**Describe the bug**\nTraining does not reach the README number.\n\n"
     "**To Reproduce**\nSteps to reproduce the behavior:\n1. `pip install -r requirements.txt`\n2. run train.py\n\n"
     "**Expected behavior**\n76.3 top-1\n\n**Actual results**\n74.9 top-1\n"),
    ("Cityscapes mIoU much lower than expected", "### Expected results\n\nmIoU 55.3\n\n### Actual results\n\n"
     "mIoU 51.9\n"),
    ("Low box AP", COLLECT_ENV + "\n".join(f"iter {i}  loss: 0.{i:03d}  lr: 0.02  acc: 9{i % 9}.1"
                                                     for i in range(120)) +
     "\nThe model zoo says 37.4 box AP, I get 35.2 with 4 GPUs."),
])
def test_templates_and_dumps_do_not_hide_a_comparison(title: str, body: str) -> None:
    d = classify([make_thread(title, body, REPLY, labels=["bug"])])[0]
    assert d.is_reproduction, d.signals


@pytest.mark.parametrize(("title", "body"), [
    ("CUDA error: no kernel image is available", "I want to reproduce the results in Table 1 but I can't even "
     "start training:\n```\nRuntimeError: CUDA error: no kernel image is available\n```\n" + COLLECT_ENV),
    ("Where does the baseline in Table 1 come from?", "Table 1 lists ResNet-50 at 76.1 top-1, the new recipe "
     "gives 80.4. Did you retrain it? Just asking for the related-work section of my thesis."),
])
def test_setup_help_and_citation_questions_are_dropped(title: str, body: str) -> None:
    d = classify([make_thread(title, body, REPLY)])[0]
    assert not d.is_reproduction, d.signals


def test_alternatives_split_only_at_top_level() -> None:
    from extract.signals import _alternatives

    assert _alternatives(r"a|b(c|d)|[|(]x|\|y|(?:e|f)g|[]|]z|[^]|]w") == [
        "a", "b(c|d)", "[|(]x", r"\|y", "(?:e|f)g", "[]|]z", "[^]|]w"]
    assert _alternatives("single") == ["single"]


def test_cue_patterns_searched_by_alternative_answer_like_the_whole_pattern(sample_threads) -> None:  # noqa: ANN001
    """Every cue, on the prose windows of every labeled thread we ship and on odd strings, gives the same
    answer searched alternative by alternative as the whole regex does."""
    import random
    import re

    from extract.bench import load_dev_set
    from extract.signals import _NEG_L, _POS_L, _window
    from tests.extract.test_devset import DEVSET

    threads = list(sample_threads) + [t for name in ("devset", "realism", "realgh")
                                      for t, *_ in load_dev_set(DEVSET.parent / f"{name}.jsonl")]
    texts = [part.lower() for t in threads for part in _window(t)]
    rng = random.Random(3)
    words = ["paper", "reported", "vs", "got", "only", "|", "(", "[", "81.8", "复现", "\n", "table 2", "not match"]
    texts += [" ".join(rng.choice(words) for _ in range(rng.randint(0, 12))) for _ in range(300)]
    for name, (_w, cue) in {**_POS_L, **_NEG_L}.items():
        whole = re.compile(cue.pattern, cue.parts[0].flags)
        for text in texts:
            assert cue.search(text) == (whole.search(text) is not None), (name, text[:80])
