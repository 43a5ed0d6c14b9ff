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


MORE = [
    # "X (paper Y)" with a unit or words between, and the metric name containing digits
    ("SI-SDRi = 14.3 dB (paper 15.6).", 15.6, 14.3),
    ("halfcheetah normalized score 70.2 with the new bindings (paper 91.6).", 91.6, 70.2),
    ("I get pass@1 = 21.3 on HumanEval, README says 25.6.", 25.6, 21.3),
    ("Test bpc = 1.08, can't get 1.02 like the paper.", 1.02, 1.08),
    # a comparison whose subject is the asker's result; "the paper's" as a possessive
    ("MSE way higher than reported (0.734 vs 0.172)", 0.172, 0.734),
    ("So ROUGE-L 12.09 vs the paper's 41.4 ??", 41.4, 12.09),
    # a paper statement on its own, then the asker's number in a later sentence
    ("Paper Table 2: hopper = 64.6. After 1M steps the normalized return is 58.1.", 64.6, 58.1),
    # Chinese
    ("我跑出来只有 71.2，论文里是 74.5。", 74.5, 71.2),
]


@pytest.mark.parametrize(("text", "paper", "mine"), MORE)
def test_more_number_pairs(text: str, paper: float, mine: float) -> None:
    s = find_symptom(text)
    assert (s.paper and s.paper.value, s.obtained and s.obtained.value) == (paper, mine)


def test_tables_with_paper_and_mine_columns_or_rows() -> None:
    cols = "| Dataset | Mine | Paper |\n|---|---|---|\n| IIIT5k | 95.1 | 99.1 |\n| SVT | 91.0 | 97.9 |"
    s = find_symptom("Results:\n\n" + cols)
    assert (s.paper.value, s.obtained.value) == (99.1, 95.1)
    rows = "| | mAP |\n|---|---|\n| reproduced | 38.1 |\n| reported in paper | 40.2 |"
    s = find_symptom(rows)
    assert (s.paper.value, s.obtained.value) == (40.2, 38.1)


LOG_TRAPS = (
    "Environment: torch 1.13.1, CUDA 11.7, Python 3.9, 8x V100, seed 42, batch size 256, 90 epochs, "
    "lr 0.1, input 224x224, issue #1234, run on 2023-04-05, training 45% done.\n"
    "```\nEpoch 89: loss 1.23 acc 75.31\nval acc 76.02\n```\n"
)


def test_log_and_config_numbers_are_never_values() -> None:
    s = find_symptom(LOG_TRAPS)
    assert s.paper is None and s.obtained is None
    s = find_symptom(LOG_TRAPS + "I only get 76.0 top-1 while the paper reports 77.4.")
    assert (s.paper.value, s.obtained.value) == (77.4, 76.0)


@pytest.mark.parametrize(("text", "paper", "mine"), [
    # template sections read by role
    ("**Describe the bug**\nLow accuracy.\n\n**Expected behavior**\n76.3 top-1 (README table)\n\n"
     "**Actual results**\n74.9 top-1 (best epoch 296)\n", 76.3, 74.9),
    ("### Expected results\n\nmIoU 55.3\n\n### Actual results\n\nmIoU 51.9\n", 55.3, 51.9),
    # counts in an "A instead of B" pair are not values; the stated comparison is
    ("The paper reports 79.6 mIoU, I only got 77.4. I used 4 GPUs instead of 8.", 79.6, 77.4),
    # the first comparison stated is the symptom, a later pair is a second split/metric
    ("test-clean WER 3.9，论文是 2.7。test-other 也差很多（9.8 vs 6.3）。", 2.7, 3.9),
    # a stated mean over seeds is the compared value; a list of runs starts with the first
    ("I ran 3 seeds: 71.2, 73.9, 72.4 (mean 72.5). The paper reports 74.1.", 74.1, 72.5),
    ("val accuracy 66.9 / 67.3 / 66.5 with seeds — paper 67.9 on val", 67.9, 66.9),
    # GPU model numbers and log lines are not values
    ("我用 4 张 3090 训练，论文里是 79.6，我跑出来只有 77.4。", 79.6, 77.4),
    ("Epoch [40/40] loss: 0.4123 lr: 0.000010 val_acc: 76.84\nPaper says 79.3 in Table 3, I get 76.8.", 79.3, 76.8),
])
def test_real_world_shapes(text: str, paper: float, mine: float) -> None:
    s = find_symptom(text)
    assert (s.paper and s.paper.value, s.obtained and s.obtained.value) == (paper, mine)
    assert s.paper is not None and s.paper.quote in text  # still a verbatim quote
