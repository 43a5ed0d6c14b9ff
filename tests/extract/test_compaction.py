from __future__ import annotations

from extract.compaction import compact
from tests.extract.threads import make_thread


def test_compaction_drops_noise_and_keeps_ids() -> None:
    log = "```\n" + "\n".join(f"step {i} loss 0.{i}" for i in range(200)) + "\n```"
    t = make_thread("Lower BLEU", "I get 28.4 vs 32.7 in the paper.\n" + log, [
        ("ci-bot[bot]", "NONE", "Thanks for opening this issue!"),
        ("maint", "MEMBER", "> I get 28.4 vs 32.7 in the paper.\n\nUse sacrebleu with the 13a tokenizer."),
        ("asker", "NONE", "That fixed it.\n\nOn Mon, Jan 1, 2024 at 10:00 maint wrote:\n> Use sacrebleu\n"
         "> with the 13a tokenizer."),
    ])
    c = compact(t)
    assert c.dropped_bot == 1 and c.kept_ids == (None, "c1-2", "c1-3")
    assert "[c:c1-2]" in c.text and "[c:c1-3]" in c.text and "Thanks for opening" not in c.text
    assert c.text.count("I get 28.4 vs 32.7") == 1  # the quoted repeat is gone
    assert "wrote:" not in c.text
    assert "lines trimmed" in c.text and "step 199" in c.text and "step 100 " not in c.text
    assert c.tokens < c.full_tokens / 2
