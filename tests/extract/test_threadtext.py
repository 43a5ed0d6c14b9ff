from __future__ import annotations

import pytest

from extract.threadtext import sentences


@pytest.mark.parametrize(("text", "expected"), [
    ("The setup is 8 GPUs x 3584 tokens, i.e. 28k tokens per update. Use --update-freq 8.",
     ["The setup is 8 GPUs x 3584 tokens, i.e. 28k tokens per update.", "Use --update-freq 8."]),
    ("As described in Sec. 4.2 of the paper. Next.", ["As described in Sec. 4.2 of the paper.", "Next."]),
    ("We follow Smith et al. and use 5 seeds. Done.", ["We follow Smith et al. and use 5 seeds.", "Done."]),
    ("Got 28.4 vs. 32.7 reported (see Fig. 3). Hmm.", ["Got 28.4 vs. 32.7 reported (see Fig. 3).", "Hmm."]),
    ("J. Doe wrote the eval script. It uses 13a.", ["J. Doe wrote the eval script.", "It uses 13a."]),
    ("line one\nline two", ["line one", "line two"]),
    ("论文里是78.5。我只有76.2。", ["论文里是78.5。", "我只有76.2。"]),
])
def test_sentences_do_not_break_after_abbreviations(text: str, expected: list[str]) -> None:
    got = [s.text for s in sentences(text)]
    assert got == expected
    assert all(s in text for s in got)  # every sentence stays a verbatim quote


def test_machine_output_is_not_prose() -> None:
    from extract.threadtext import is_machine_line

    for line in ("Epoch [12/40]  loss: 2.3412  lr: 0.099846  val_acc: 21.23  time: 84.3s",
                 " Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.421",
                 "2023-04-10 12:20:11,123 - INFO - Epoch [1][50/7330] lr: 2.0e-02, loss: 0.81",
                 "torch==2.1.0", "mmcv-full               1.6.0", "PyTorch version: 2.0.1+cu118",
                 "[conda] numpy                     1.24.4           py310h5f9d8c6_0",
                 "| 41%   67C    P2   231W / 250W |  10957MiB / 11264MiB |     98%      Default |"):
        assert is_machine_line(line), line
    for line in ("I get 28.4 BLEU vs 32.7 in the paper, with lr=0.1, bs=256, epochs=300",
                 "The paper reports 81.8 top-1, I get 79.8 with the default config.", "mIoU 55.3",
                 "论文 Table 1 里的 mIoU 是 79.6，我跑出来只有 77.4"):
        assert not is_machine_line(line), line


def test_strip_code_drops_dumps_details_and_long_tables_but_keeps_comparisons() -> None:
    from extract.threadtext import strip_code

    classes = "\n".join(f"| class{i} | {50 + i}.1 |" for i in range(12))
    text = ("I get 71.3 mAP.\n<details><summary>train log</summary>\n\nepoch 3 acc 99.9\n</details>\n"
            "Epoch [1/40]  loss: 2.3412  lr: 0.0998  val_acc: 21.23\n"
            f"| class | ap |\n|---|---|\n{classes}\n\n"
            "| | mAP |\n|---|---|\n| Paper | 74.6 |\n| Mine | 71.3 |\n\n"
            "| seed | acc |\n|---|---|\n| 0 | 71.2 |\n| 1 | 73.9 |\n")
    out = strip_code(text)
    assert "I get 71.3 mAP." in out and "train log" in out
    assert "99.9" not in out and "21.23" not in out and "class3" not in out
    assert "| Paper | 74.6 |" in out and "| 1 | 73.9 |" in out  # paper/ours and short own tables stay
    assert all(line in text for line in out.splitlines())  # what remains is verbatim text


def test_pathological_lines_are_linear() -> None:
    from extract.threadtext import strip_code

    text = "x" * 200_000 + " 1 2 3 " + "word " * 40_000 + "\n" + "a=1 " * 20_000
    assert "word" in strip_code(text)  # returns at once: no backtracking blow-up on long lines


def test_template_sections_and_corroboration() -> None:
    from extract.threadtext import is_corroboration, template_pair, template_sections

    text = "**Describe the bug**\nlow acc\n\n### Expected results\n\nmIoU 55.3\n\n### Actual results\n\nmIoU 51.9\n"
    secs = template_sections(text)
    assert [(s.role, text[s.start:s.end].strip()) for s in secs] == [("expected", "mIoU 55.3"),
                                                                     ("actual", "mIoU 51.9")]
    assert template_pair(text)
    assert not template_pair("**Expected behavior**\nIt prints the accuracy (about 40%).\n")
    assert is_corroboration("+1, I get 91.5 too (3 seeds).") and is_corroboration("same here 😢 90.8")
    assert not is_corroboration("The script's default is 1 epoch; the paper fine-tunes 3 epochs.")
