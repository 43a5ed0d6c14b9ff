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
