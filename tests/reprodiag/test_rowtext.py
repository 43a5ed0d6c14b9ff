"""Dataset row texts: the asker's view of a thread, complete sentences, names in greetings."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from reprodiag.rowtext import (
    as_sentence,
    asker_view,
    clean_post,
    cut_text,
    greeting_names,
    known_sentences,
    neutralize_names,
    strip_quoted,
    value_known,
)
from reprodiag.schema import Comment, Thread

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def _thread(body: str, comments: list[tuple[str, str]] = (), title: str = "BLEU 24.1 vs 27.6") -> Thread:
    return Thread(repo="o/r", number=1, kind="issue", title=title, body=body, author="asker", state="open",
                  created_at=T0, updated_at=T0,
                  comments=[Comment(id=f"c{i}", author=a, body=b, created_at=T0) for i, (a, b) in enumerate(comments)])


def test_quoted_replies_template_comments_images_and_outcome_edits_are_removed() -> None:
    body = ("<!-- describe the bug -->\nI get 24.1 BLEU.\n> quoted: the paper used joint BPE\n![x](http://i/x.png)\n"
            "Here is more.\n\nEDIT: solved, it was the joint BPE.\n")
    text = clean_post(body)
    assert "24.1" in text and "Here is more." in text
    for gone in ("describe the bug", "quoted", "x.png", "solved", "joint BPE"):
        assert gone not in text
    mail = "Thanks!\n\nOn Mon, Jan 8, 2024 at 10:00 AM Li <li@x.org> wrote:\n> We used a joint 32k BPE.\n"
    assert strip_quoted(mail).strip() == "Thanks!"
    assert "写道" not in strip_quoted("谢谢\n在 2024年1月8日 李 写道：\n> 用联合 BPE")


def test_cut_text_never_cuts_mid_sentence_or_ends_on_a_colon() -> None:
    text = "First sentence is here. Second one follows. " * 30 + "\n\nMy config is:"
    out, cut = cut_text(text, 200)
    assert cut and len(out) <= 200 and out.endswith(".")
    out, cut = cut_text("I ran the script as follows:", 500)
    assert not cut and out == "I ran the script as follows."
    out, _ = cut_text("Numbers below.\nThe config is:", 500)
    assert out == "Numbers below."
    out, cut = cut_text("```\n" + "x = 1\n" * 400 + "```", 100)
    assert out == "" and cut  # a code block is never cut open


def test_asker_view_keeps_only_the_askers_text_before_the_first_reply() -> None:
    t = _thread("BLEU 24.1 vs 27.6\nI trained the base model and get 24.1.",
                [("asker", "Also I tried 3 seeds, all near 24."), ("owner", "The paper reports 99.9 with big."),
                 ("asker", "With the fix I now get 27.5.")])
    v = asker_view(t)
    assert v.opening == "I trained the base model and get 24.1."  # the repeated title line is gone
    assert "3 seeds" in v.known and "99.9" not in v.known and "27.5" not in v.known
    assert value_known(24.1, v.known) and value_known(27.6, v.known) and not value_known(99.9, v.known)
    assert not value_known(None, v.known)
    assert known_sentences("I tried 3 seeds, all near 24. The owner said 99.9.", "Also I tried 3 seeds, all near 24.") \
        == "I tried 3 seeds, all near 24."


@pytest.mark.parametrize(("text", "want"), [
    ("- Could be seed variance?", "It could be seed variance."),
    ("Did you use the same dropout values?", "It was asked whether you used the same dropout values."),
    ("Did you also reduce `warmup_steps`?", "It was asked whether you also reduced `warmup_steps`."),
    ("Maybe the warmup is too short?", "It may be that the warmup is too short."),
    ("Yes, `--auto-scale-lr` does linear scaling.", "`--auto-scale-lr` does linear scaling."),
    ("Hi Li Wei, the paper used test-dev", "The paper used test-dev."),
    ("(2) after training we ran a **fine-tuning** pass", "After training we ran a fine-tuning pass."),
    ("- That adds ~15% more training data.", None),
    ("Two data differences stand out:", None),
    ("Welcome to the world of changed defaults :) A few known ones:", None),
    ("Why is that?", None),
    ("ok", None),
])
def test_as_sentence(text: str, want: str | None) -> None:
    assert as_sentence(text) == want


def test_causes_may_not_be_questions() -> None:
    assert as_sentence("Did you use speed perturbation?", questions=False) is None
    assert as_sentence("The paper used speed perturbation.", questions=False) == "The paper used speed perturbation."


def test_greeting_and_signoff_names_become_placeholders() -> None:
    text = "Hi Li Wei, the gap is large.\n\nThanks,\nAnna"
    out = neutralize_names(text, addressee="maintainer_0", writer="asker_0")
    assert out == "Hi maintainer_0, the gap is large.\n\nThanks,\nasker_0"
    assert greeting_names(text) == ["Li Wei", "Anna"] and greeting_names(out) == []
    for keep in ("Hi there, thanks.", "Hello all,", "Hello!\nThe metric is off.", "Hi, Thanks for the code.",
                 "Thanks for the help."):
        assert neutralize_names(keep, addressee="x_0", writer="y_0") == keep and not greeting_names(keep)
