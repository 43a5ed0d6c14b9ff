from __future__ import annotations

import pytest

from extract.symptom import find_symptom

CASES = [
    ("I get 28.4 BLEU on newstest2014 vs 32.7 in the paper.", "BLEU", 32.7, 28.4),
    ("The paper reports 81.8 top-1, I get 79.8 with the default config.", "top-1 accuracy", 81.8, 79.8),
    ("Following the README I only got 38.1 mAP, the model zoo says 40.2.", "mAP", 40.2, 38.1),
    ("My reproduction gives F1 = 85.3 while Table 2 lists 88.9.", "F1", 88.9, 85.3),
    ("按照论文的设置训练，我的结果是 76.1，论文中是 78.5，差距有点大。", None, 78.5, 76.1),
    ("Using PyTorch 1.12 and CUDA 11.3 on 8x V100, I can only reach 79.8% top-1 accuracy (paper: 81.8%).",
     "top-1 accuracy", 81.8, 79.8),
    ("I cannot reach 81.8 top-1; my best is 79.8 ± 0.3 after 300 epochs.", "top-1 accuracy", 81.8, 79.8),
    ("| | top-1 |\n|---|---|\n| Paper | 81.8 |\n| Mine | 79.8 |", "top-1 accuracy", 81.8, 79.8),
    ("Hi, I get ~11 BLEU but the paper reports 27.3 BLEU on WMT14 En-De.", "BLEU", 27.3, 11.0),
    ("Test ppl **20.9** (paper 18.3).", "perplexity", 18.3, 20.9),
]


@pytest.mark.parametrize(("text", "metric", "paper", "mine"), CASES)
def test_number_pairs(text: str, metric: str | None, paper: float, mine: float) -> None:
    s = find_symptom(text)
    assert (s.paper and s.paper.value, s.obtained and s.obtained.value) == (paper, mine)
    assert s.gap == pytest.approx(mine - paper)
    if metric:
        assert s.metric == metric


def test_versions_counts_and_gap_phrases_are_not_values() -> None:
    s = find_symptom("Trained 300 epochs on 8 GPUs with torch==2.1.0 in 2023 and my results are ~2 points lower "
                     "than reported.")
    assert s.paper is None and s.obtained is None


def test_quotes_are_verbatim() -> None:
    text = "The paper reports 81.8 top-1,\n   I get 79.8 with the default config."
    s = find_symptom(text)
    assert s.paper.quote in text and s.obtained.quote in text
