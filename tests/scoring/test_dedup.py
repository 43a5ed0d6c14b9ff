"""Near-duplicate removal on crafted near-duplicates."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl

from reprodiag.schema import Record
from scoring.config import ScoreConfig
from scoring.dedup import minhash_signatures, near_duplicates
from scoring.pipeline import score_batch

BASE = ("When I train the released ResNet-50 config on ImageNet for 90 epochs with 8 V100 GPUs I only get "
        "76.1 top-1 accuracy, while the paper reports 77.4. I used the default learning rate and batch size "
        "and the standard augmentation from the repository, nothing else changed.")


def test_cross_post_and_small_edits_cluster_and_the_first_wins() -> None:
    texts = [
        BASE,
        "Completely different: our BLEU on WMT14 en-de is 26.1 but the paper says 28.4 with beam size four.",
        BASE + " Thanks!",                       # cross-post with a tail
        BASE.replace("nothing else changed", "nothing more changed"),
        "short text",
        "short text",                            # too short to judge
    ]
    res = near_duplicates(texts, threshold=0.8)
    assert res.duplicate_of.tolist() == [-1, -1, 0, 0, -1, -1]
    assert res.clusters == 1 and res.removed == 2


def test_different_numbers_in_a_template_are_not_duplicates() -> None:
    a = BASE
    b = BASE.replace("76.1", "71.3").replace("77.4", "80.9").replace("ResNet-50", "ViT-B/16").replace(
        "ImageNet", "CIFAR-100").replace("90 epochs", "300 epochs")
    assert near_duplicates([a, b], threshold=0.8).duplicate_of.tolist() == [-1, -1]


def test_signatures_are_deterministic_and_estimate_jaccard() -> None:
    words = [f"w{i}" for i in range(400)]
    a = " ".join(words[:200])
    b = " ".join(words[:150] + words[200:250])   # word 3-shingle Jaccard ≈ 148/248 ≈ 0.6
    s1 = minhash_signatures([a, b], num_perm=256, seed=3)
    s2 = minhash_signatures([a, b], num_perm=256, seed=3)
    assert np.array_equal(s1, s2)
    est = float((s1[0] == s1[1]).mean())
    assert 0.45 < est < 0.75


def test_score_batch_marks_duplicates_and_keeps_the_best(make_record: Callable[..., Record]) -> None:
    best = make_record(1, repo="a/x", problem_statement=BASE, reactions=9)           # score 8
    copy = make_record(2, repo="b/y", problem_statement=BASE + " (cross-posted)")   # score 7
    other = make_record(3, repo="c/z")
    out = {r.thread_id: r for r in score_batch([copy, other, best], ScoreConfig()).records}
    assert out[copy.thread_id].duplicate_of == best.thread_id
    assert out[copy.thread_id].quality.drop_reason == "near_duplicate" and not out[copy.thread_id].quality.keep
    assert out[best.thread_id].quality.keep and out[best.thread_id].duplicate_of is None
    assert out[other.thread_id].quality.keep


def test_long_short_and_empty_documents() -> None:
    long_doc = " ".join(f"w{i % 5000}" for i in range(40_000))  # more shingles than one signature block
    texts = ["", long_doc, "a b", None, long_doc + " tail", "a b", BASE, "x"]
    sig = minhash_signatures(pl.Series(texts, dtype=pl.String))
    assert (sig[0] == 0xFFFFFFFF).all() and (sig[3] == 0xFFFFFFFF).all()
    assert np.array_equal(sig[2], sig[5]) and not (sig[2] == 0xFFFFFFFF).any()
    # the same signature whether a document is alone or among others
    assert np.array_equal(minhash_signatures([long_doc])[0], sig[1])
    assert np.array_equal(minhash_signatures([BASE])[0], sig[6])
    res = near_duplicates(texts, threshold=0.8)
    assert res.duplicate_of.tolist() == [-1, -1, -1, -1, 1, -1, -1, -1]
