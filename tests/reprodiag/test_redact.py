"""Redaction: every kind masked, placeholders stable per thread, idempotent, documents stay valid."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from reprodiag.redact import (
    KINDS,
    People,
    mask_secrets,
    redact_record,
    redact_text,
    redact_thread,
)
from reprodiag.schema import Comment, Participant, Record, Thread, ThreadStats

# Planted secrets, assembled so this file itself holds no scannable token literal.
GH = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
GH_PAT = "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"
OPENAI = "sk-proj-" + "Zq8Xw7Vu6Ts5Rq4Po3Nm2Lk1Ji0Hg9Fe"
OPENAI_OLD = "sk-" + "T3BlbkFJabcdefghijklmnopqrstuv12"
ANTHROPIC = "sk-ant-api03-" + "abcDEF123ghiJKL456mnoPQR789"
AWS_ID = "AKIA" + "IOSFODNN7EXAMPLQ"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY12"
HF = "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
ENTROPY = "Zx8Kq2LmP9vR4tW7nB3cD6fG1hJ5kY0sA2qW"
ASSIGNED = "q8Zk2LmP0xYv7RtW3nB9"
KEY_BODY = "MIIEowIBAAKCAQEAx7secretkeymaterial"
SECRETS = [GH, GH_PAT, OPENAI, OPENAI_OLD, ANTHROPIC, AWS_ID, AWS_SECRET, HF, ENTROPY, ASSIGNED, KEY_BODY]
PII = ["jane.doe@example.org", "203.0.113.77", "alice-w", "carol", "carol42", "bobmaint", "Zed Example"]

PLANTED = f"""I get 28.4 BLEU vs 32.7. My token is {GH} and {GH_PAT}.
OPENAI_API_KEY={OPENAI} (old: {OPENAI_OLD}), claude {ANTHROPIC}
aws_access_key_id = {AWS_ID}
aws_secret_access_key = {AWS_SECRET}
hub: {HF}   blob {ENTROPY}
config: api_token: "{ASSIGNED}"
-----BEGIN RSA PRIVATE KEY-----
{KEY_BODY}
-----END RSA PRIVATE KEY-----
Reach me at jane.doe@example.org or on server 203.0.113.77.
Paths: /home/carol/exp/run.py, /Users/carol/x, C:\\Users\\carol\\y
@alice-w said ask @bobmaint.
On Tue, Mar 3, 2020 at 10:00 AM Zed Example <zed@example.com> wrote:
> the quoted mail
> more quoted
"""


def test_mask_secrets_masks_each_secret_kind_and_keeps_the_rest() -> None:
    out = mask_secrets(PLANTED)
    for s in [GH, GH_PAT, OPENAI, OPENAI_OLD, ANTHROPIC, AWS_ID, AWS_SECRET, HF, ASSIGNED, KEY_BODY]:
        assert s not in out
    for kind in ("GITHUB_TOKEN", "OPENAI_KEY", "ANTHROPIC_KEY", "AWS_ACCESS_KEY", "AWS_SECRET_KEY", "HF_TOKEN",
                 "SECRET", "PRIVATE_KEY"):
        assert f"[REDACTED_{kind}]" in out
    # mask_secrets leaves personal data and ordinary text alone
    assert "jane.doe@example.org" in out and "@alice-w" in out and "28.4 BLEU vs 32.7" in out


@pytest.mark.parametrize("text, kind", [
    ("contact bob.smith+ml@uni.edu now", "EMAIL"),
    ("server at 10.20.30.40 is down", "IP"),
    ("see /home/alice/proj", "HOME_PATH"),
    ("see /Users/bob/proj", "HOME_PATH"),
    ("see C:\\Users\\carol\\proj", "HOME_PATH"),
    ("curl https://user:hunter22@example.com/x", "URL_CREDENTIALS"),
    ("Authorization: Bearer abcdefghijklmnop1234567890", "BEARER_TOKEN"),
    ("blob " + ENTROPY, "HIGH_ENTROPY"),
    ("password = hunter22", "SECRET"),
    ("slack xoxb-" + "1234567890-abcdefghij", "SLACK_TOKEN"),
    ("key AIza" + "SyA1234567890abcdefghijklmnopqrstuv", "GOOGLE_API_KEY"),
])
def test_each_pii_kind_is_masked_and_counted(text: str, kind: str) -> None:
    from collections import Counter

    counts: Counter[str] = Counter()
    out = redact_text(text, People(), counts)
    assert f"[REDACTED_{kind}]" in out
    assert counts[kind] == 1
    assert kind in KINDS


@pytest.mark.parametrize("text", [
    "cuDNN 8.9.2.26 and TensorRT 8.6.1.6",
    "commit 3f2a9c1e5b7d8f0a1b2c3d4e5f6a7b8c9d0e1f2a fixed it",
    "run on 127.0.0.1:8080",
    "tokenizer = AutoTokenizer.from_pretrained(name)",
    "token = os.environ['HF_TOKEN']",
    "@torch.no_grad()\n@staticmethod",
    "configs/ResNet50x4/imagenet1k_train_config_v2.yaml",
    "I get 79.1 top-1 but the paper reports 81.8 with torch==1.8.1",
])
def test_ordinary_text_is_not_redacted(text: str) -> None:
    assert redact_text(text, People()) == text


def test_reply_boilerplate_is_stripped() -> None:
    text = "Thanks, it works now.\n\nOn Tue, Mar 3, 2020 at 10:00 AM Jane Roe <jr@x.org> wrote:\n> old text\n> more\n"
    out = redact_text(text, People())
    assert "wrote:" not in out and "old text" not in out and "jr@x.org" not in out
    assert out.startswith("Thanks, it works now.")


def test_user_names_get_stable_role_placeholders() -> None:
    people = People([("Alice-W", "asker"), ("bobmaint", "maintainer"), ("helper1", "contributor")])
    out = redact_text("@alice-w thanks @BobMaint; helper1 and @stranger agree; see bobmaint/repo", people)
    assert out == "@asker_0 thanks @maintainer_0; contributor_0 and @user_0 agree; see bobmaint/repo"
    # same people object: same placeholders in another field; bare logins match case-sensitively as written,
    # and users only @mentioned are replaced in their @ form only
    assert redact_text("ping @stranger and Alice-W, stranger", people) == "ping @user_0 and asker_0, stranger"
    assert redact_text("alice-w", people) == "alice-w"


def test_redaction_is_idempotent() -> None:
    people = People([("alice-w", "asker"), ("bobmaint", "maintainer")])
    once = redact_text(PLANTED, people)
    assert redact_text(once, People([("alice-w", "asker"), ("bobmaint", "maintainer")])) == once


def _thread() -> Thread:
    t0 = datetime(2021, 5, 1, tzinfo=UTC)
    return Thread(
        repo="lab/model", number=7, kind="issue", title="Cannot reproduce BLEU (ping @bobmaint)",
        body=PLANTED, author="alice-w", state="closed", created_at=t0, updated_at=t0,
        comments=[
            Comment(id="c1", author="bobmaint", author_association="OWNER", created_at=t0,
                    body="@alice-w use sacreBLEU; my key was " + OPENAI),
            Comment(id="c2", author="dependabot[bot]", created_at=t0, body="bump"),
            Comment(id="c3", author="carol42", created_at=t0, body="same at /home/carol/x",
                    replies=[Comment(id="c4", author="alice-w", created_at=t0, body="thanks carol42")]),
        ],
    )


def test_redact_thread_gives_a_valid_thread_without_secrets_or_logins() -> None:
    red, counts = redact_thread(_thread())
    assert isinstance(red, Thread) and red.id == "lab/model#7"
    assert red.author == "asker_0"
    assert [c.author for c in red.all_comments()] == ["maintainer_0", "bot_0", "contributor_0", "asker_0"]
    dump = red.model_dump_json()
    for s in SECRETS + PII:
        assert s not in dump, s
    assert red.title == "Cannot reproduce BLEU (ping @maintainer_0)"
    assert counts.by_kind["USER"] >= 6 and counts.by_kind["GITHUB_TOKEN"] == 2
    assert counts.total == sum(counts.by_kind.values())


def test_redact_record_gives_a_valid_record() -> None:
    rec = Record(
        thread_id="lab/model#7", repo="lab/model", problem_statement=PLANTED, root_cause="ask @bobmaint",
        environment="torch 1.8 at /home/alice-w/env",
        stats=ThreadStats(participants=[Participant(login="bobmaint", role="maintainer"),
                                        Participant(login="alice-w", role="asker")]),
    )
    red, counts = redact_record(rec)
    assert isinstance(red, Record) and red.thread_id == rec.thread_id and red.repo == rec.repo
    assert [p.login for p in red.stats.participants] == ["maintainer_0", "asker_0"]
    assert red.root_cause == "ask @maintainer_0"
    dump = red.model_dump_json()
    for s in SECRETS + PII:
        assert s not in dump, s
    assert counts.total > 10


def test_odd_unicode_and_huge_text_do_not_break_redaction() -> None:
    text = "İstanbul ß ﬁ 😀 复现 指标对不上 @İlker " + "x" * 200_000 + " " + GH
    out = redact_text(text, People([("İlker", "asker")]))
    assert GH not in out and "复现" in out


# --------------------------------------------------------------------------- false positives


def test_common_word_logins_stay_in_prose_but_not_as_mentions_or_authors() -> None:
    people = People([("data", "asker"), ("model", "maintainer"), ("bert", "contributor"),
                     ("training", "contributor")])
    text = "The data and model are fine; BERT and bert-base differ; training is slow. @data @Model thanks bert"
    out = redact_text(text, people)
    assert out == ("The data and model are fine; BERT and bert-base differ; training is slow. "
                   "@asker_0 @maintainer_0 thanks bert")
    t0 = datetime(2022, 1, 1, tzinfo=UTC)
    red, _ = redact_thread(Thread(repo="a/b", number=1, kind="issue", title="model gap", body="the data split",
                                  author="data", state="open", created_at=t0, updated_at=t0,
                                  comments=[Comment(id="c", author="model", author_association="OWNER",
                                                    created_at=t0, body="check the data loader")]))
    assert (red.author, red.comments[0].author) == ("asker_0", "maintainer_0")
    assert (red.title, red.body, red.comments[0].body) == ("model gap", "the data split", "check the data loader")


@pytest.mark.parametrize("login, text, expected", [
    ("alice-w", "thanks alice-w!", "thanks asker_0!"),           # hyphen
    ("jdoe42", "jdoe42 said so", "asker_0 said so"),              # digit
    ("ml_guy", "(ml_guy)", "(asker_0)"),                          # underscore
    ("DeepLearner", "ask DeepLearner", "ask asker_0"),             # mixed case
    ("DeepLearner", "ask deeplearner", "ask deeplearner"),         # case-sensitive as a bare word
    ("zhangwei", "zhangwei fixed it", "asker_0 fixed it"),         # 6+ letters, not a common word
    ("dataset", "the dataset is wrong", "the dataset is wrong"),   # common word
    ("alice-w", "alice-w/repo and xalice-w and alice-wx", "alice-w/repo and xalice-w and alice-wx"),
    ("alice-w", "email alice-w@x.org", "email [REDACTED_EMAIL]"),
])
def test_bare_logins_only_when_login_like(login: str, text: str, expected: str) -> None:
    assert redact_text(text, People([(login, "asker")])) == expected


@pytest.mark.parametrize("text", [
    "git clone git@github.com:owner/repo.git",
    "remote git@gitlab.com:group/proj.git and GIT@bitbucket.org:x/y",
    "cuDNN 8.9.2.26, TensorRT 8.6.1.6, TensorRT-8.6.1.6, libcudnn8=8.9.2.26-1+cuda12.1",
    "torch==1.2.3.4, pkg>=10.0.0.1, version 10.0.0.1, v 1.2.3.4, driver: 5.1.2.3, 1.2.3.4.5",
    "octets over 255: 300.1.2.3 and 10.0.0.256",
])
def test_hosts_and_versions_are_not_redacted(text: str) -> None:
    assert redact_text(text, People()) == text


@pytest.mark.parametrize("text, kind", [
    ("mail jane.git@example.org", "EMAIL"),
    ("mail gitlab@example.org", "EMAIL"),
    ("server at 10.1.2.3 is down", "IP"),
    ("MASTER_ADDR=10.1.2.3", "IP"),
    ("ip: 192.168.0.1", "IP"),
])
def test_near_misses_are_still_redacted(text: str, kind: str) -> None:
    assert f"[REDACTED_{kind}]" in redact_text(text, People())


def test_anchored_secret_scan_equals_a_full_scan() -> None:
    import dataclasses
    import random
    from collections import Counter

    from reprodiag.redact import CHECKED_RULES, apply_checked_rule

    rule = CHECKED_RULES[0]
    full = dataclasses.replace(rule, anchor=())
    rng = random.Random(5)
    atoms = ["token", "api_key", "Secret", "PASSWORD", "pwd", "my", "x", "_", "=", ": ", " ", '"', "'", "(", "1",
             "abc123XYZ789qq", "hunter22", "ſ", "K", "İ", "keys", "credentials", "os.environ", "\n", "tokenizer",
             ASSIGNED, "TOKEN", "Key"]
    hits = 0
    for _ in range(3000):
        text = "".join(rng.choice(atoms) for _ in range(rng.randrange(1, 12)))
        a, b = Counter(), Counter()
        assert apply_checked_rule(rule, text, a) == apply_checked_rule(full, text, b), text
        assert a == b
        hits += a["SECRET"]
    assert hits > 50
