"""``reprodiag audit DATASETS_DIR``: read built datasets the way a trainer would and report what would teach
the wrong thing. Per dataset and split:

* rows, exact duplicates of prompts and of answers;
* near duplicates of prompts and of answers (MinHash over word 3-grams, estimated Jaccard ≥ 0.9; rows
  other than the first of each cluster are counted);
* leakage: per row, the share of the root cause's content words (the cause line of the SFT assistant turn
  or of the DPO chosen answer, the eval gold root cause; the whole answer when it states no cause) that
  already appear in the prompt; rows above ``LEAK_THRESHOLD`` are listed with their thread id;
* PII and secrets in every text column: e-mails, tokens and keys, IPs, home paths (the redaction rules),
  @mentions, names in greetings and sign-offs ("Hi Wei", "Thanks, Anna"), and, when the participants are
  known (``participants``: thread id → logins, given by ``build`` and by ``audit`` on a workspace), the
  logins of the row's thread participants;
* fragments: answer lines that are questions or end on ":" (an answer should be complete sentences);
* DPO shortcuts: a cross-validated logistic classifier on surface features only (length, lines, sentences,
  bullets, colons, question marks) told which of a pair is the chosen answer (0.5 = no shortcut), the
  chosen / rejected median length ratio, and how often one rejected text repeats;
* boilerplate in the answers (SFT assistant turns, DPO chosen answers, over all splits): the share of rows
  holding the sentence most rows share (a sentence in a single row is no boilerplate), the share of rows
  holding any sentence found in at least 5% of the rows, and the answers' length distribution (characters);
  a phrase every row carries teaches the form, not the diagnosis;
* eval items: the gold root cause is a declarative cause (not a question, greeting or instruction), and no
  eval repository is also a training repository;
* the SFT mixes (``sft_resolved``, ``sft_full``; :mod:`reprodiag.mixes`), where the build wrote them: rows per
  split and resolution type, rows that are not a row of ``sft``'s same split, and rows of a resolution type
  the mix does not hold (both must be 0);
* counts per error type, tier, resolution type and verified.

A check fails when its figure crosses the limit in ``LIMITS``; ``--strict`` exits 1 then.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from reprodiag.errors import UserError
from reprodiag.rowtext import greeting_names

LEAK_THRESHOLD = 0.6
NEAR_DUP_JACCARD = 0.9
LIMITS = {"leak_rows": 0, "pii_rows": 0, "shortcut_accuracy": 0.65, "length_ratio_low": 0.8,
          "length_ratio_high": 1.25, "rejected_max_repeats": 2, "non_declarative_gold": 0, "repo_overlap": 0,
          "fragment_lines": 0, "common_sentence_share": 0.05, "mix_rows_wrong": 0}
#: A sentence found in at least this share of a dataset's answers counts as common (boilerplate).
COMMON_SENTENCE_ROWS = 0.05
_CAUSE_LINE = re.compile(r"^(?:Root cause|Most likely cause[^:\n]*):\s*(.+)$", re.M)

_WORD = re.compile(r"[a-z][a-z0-9_.-]{3,}")
_STOP = frozenset("""this that with from have were been they their there what which when where will would should
could about into than then them these those your yours also only just very more most some such other because
while after before over under between paper model training results result reported number numbers same does
doesn make sure check using used uses""".split())
#: An @mention as the redactor reads one: not a decorator or call (``@torch.no_grad()``, ``@2DMOT15(val)``),
#: not ``@org/repo``, not part of an e-mail address.
_MENTION = re.compile(r"(?<![\w.])@[A-Za-z0-9][A-Za-z0-9-]{1,38}(?![A-Za-z0-9_(/\-])(?!\.\w)")
_QUESTION_START = re.compile(r"^\s*(?:did|do|does|can|could|would|should|is|are|have|has|what|why|how|which|any)\b",
                             re.I)
_INSTRUCTION_START = re.compile(r"^\s*(?:try|use|set|please|resume|run|change|make|add|remove|check|see|install|"
                                r"upgrade|downgrade|hi|hello|thanks)\b", re.I)


def _content(text: str) -> set[str]:
    return {w for w in _WORD.findall((text or "").lower()) if w not in _STOP}


def _turns(msgs: Any, roles: tuple[str, ...]) -> str:
    return "\n".join(str(m.get("content") or "") for m in (msgs or []) if isinstance(m, dict) and m.get("role") in roles)


def leak_share(prompt: str, answer: str) -> float:
    """Share of the answer's content words that the prompt already holds (0 when the answer has none)."""
    a = _content(answer)
    return len(a & _content(prompt)) / len(a) if a else 0.0


def cause_of(answer: str) -> str:
    """The cause an answer states (its "Root cause:" / "Most likely cause …:" line), else the whole answer."""
    m = _CAUSE_LINE.search(answer or "")
    return m.group(1) if m else (answer or "")


def fragment_lines(answer: str) -> int:
    """Lines of an answer that are questions or end by introducing something (":") — not sentences.
    Section headings ("Ruled out:") are not counted."""
    n = 0
    for ln in (answer or "").splitlines():
        t = ln.strip()
        if not t or (t.endswith(":") and not t.startswith(("-", "*")) and len(t.split()) <= 4):
            continue
        if t.endswith(("?", "？", ":", "：")):
            n += 1
    return n


def login_hits(text: str, logins: list[str]) -> list[str]:
    """Participant logins that appear in ``text`` (``@login`` anywhere; bare only when login-like)."""
    from reprodiag.redact import PLACEHOLDER_PATTERN, bare_spans, is_login_like

    low = text.lower()
    found = []
    for login in logins:
        if not login or "[" in login or re.fullmatch(PLACEHOLDER_PATTERN, login):
            continue
        if "@" + login.lower() in low or (is_login_like(login) and next(bare_spans(text, login), None)):
            found.append("login")
            break
    return found


def pii_hits(text: str, logins: list[str] | None = None) -> list[str]:
    """Kinds of personal data or secrets found in ``text`` (``logins``: the thread's participants)."""
    from reprodiag.redact import redact_text

    kinds = login_hits(text, logins or [])
    counts: Counter[str] = Counter()
    redact_text(text, None, counts)
    kinds += [k.lower() for k, v in counts.items() if v]
    if _MENTION.search(text):
        kinds.append("mention")
    if greeting_names(text):
        kinds.append("greeting_name")
    return kinds


def declarative(cause: str) -> bool:
    """A statement of a cause: not a question, not an instruction or greeting."""
    c = (cause or "").strip()
    return bool(c) and not c.rstrip().endswith("?") and not _QUESTION_START.match(c) and not _INSTRUCTION_START.match(c)


def _surface(text: str) -> list[float]:
    lines = text.splitlines()
    return [len(text) / 1000.0, len(lines) / 10.0, len(answer_sentences(text)) / 10.0,
            sum(ln.lstrip().startswith(("-", "*")) for ln in lines) / 5.0, text.count(":") / 5.0,
            text.count("?") / 3.0]


_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")


def answer_sentences(text: str) -> list[str]:
    """The sentences of an answer, normalised (lower case, single spaces), each once."""
    out: list[str] = []
    for part in _SENTENCE_END.split(text or ""):
        t = " ".join(part.lower().split())
        if len(t) >= 3 and t not in out:
            out.append(t)
    return out


class Boilerplate:
    """Sentence counts over the answers of one dataset (fed split by split), and their lengths."""

    def __init__(self) -> None:
        self.rows = 0
        self.sentences: Counter[str] = Counter()
        self.lengths: list[int] = []

    def add(self, answers: list[str]) -> None:
        for a in answers:
            self.rows += 1
            self.sentences.update(answer_sentences(a))
            self.lengths.append(len(a))

    def figures(self) -> dict[str, Any]:
        """``most_common_share`` (rows holding the sentence most rows share; 0 when no sentence is in two
        rows), ``most_common`` (that sentence), ``common_rows_share`` (rows holding a sentence found in >= 5% of
        the rows, and in three rows at least), and the length distribution in characters."""
        n = max(self.rows, 1)
        top, count = self.sentences.most_common(1)[0] if self.sentences else ("", 0)
        floor = max(3, int(np.ceil(COMMON_SENTENCE_ROWS * n)))  # two rows sharing a sentence can be chance
        common = {t for t, c in self.sentences.items() if c >= floor}
        return {"rows": self.rows, "most_common_share": round(count / n, 4) if count >= 2 else 0.0,
                "most_common": top if count >= 2 else "", "common_sentences": len(common),
                "common_rows_share": None, "_common": common,
                "length": {k: int(np.percentile(self.lengths, q)) for k, q in
                           (("min", 0), ("p10", 10), ("median", 50), ("p90", 90), ("max", 100))}
                if self.lengths else {}}


def shortcut_accuracy(chosen: list[str], rejected: list[str], *, seed: int = 0, folds: int = 5) -> float | None:
    """Cross-validated accuracy of a logistic classifier on surface-feature differences telling which of a
    pair is the chosen one (each pair presented both ways); None with fewer than 10 pairs."""
    n = len(chosen)
    if n < 10:
        return None
    X = np.array([np.subtract(_surface(c), _surface(r)) for c, r in zip(chosen, rejected, strict=True)])
    rng = np.random.default_rng(seed)
    order = rng.permutation(n)
    correct = 0
    for k in range(folds):
        test = order[k::folds]
        train = np.setdiff1d(order, test)
        Xt = np.vstack([X[train], -X[train]])
        yt = np.concatenate([np.ones(len(train)), np.zeros(len(train))])
        w = np.zeros(X.shape[1])
        for _ in range(300):  # plain gradient descent, L2 0.01: enough for 8 features
            p = 1 / (1 + np.exp(-(Xt @ w)))
            w -= 0.5 * (Xt.T @ (p - yt) / len(yt) + 0.01 * w)
        for sign, label in ((1, 1), (-1, 0)):
            pred = (sign * X[test]) @ w > 0
            correct += int(np.sum(pred == bool(label)))
    return correct / (2 * n)


def _splits(root: Path, name: str) -> dict[str, Path]:
    """The Parquet split files of dataset ``name`` (split name → file); read one at a time (:func:`_rows`)."""
    return {f.stem: f for f in sorted((root / name).glob("*.parquet"))}


def _rows(path: Path) -> list[dict[str, Any]]:
    import polars as pl

    return pl.read_parquet(path).to_dicts()


def near_duplicate_rows(texts: list[str]) -> int:
    """Rows that are near duplicates of an earlier row (estimated Jaccard ≥ ``NEAR_DUP_JACCARD``)."""
    if len(texts) < 2:
        return 0
    from scoring.dedup import near_duplicates

    res = near_duplicates(texts, threshold=NEAR_DUP_JACCARD)
    return int(np.sum(res.duplicate_of >= 0))


def audit(root: Path, participants: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """The audit of one build output folder (``sft``, ``dpo``, ``eval`` sub-folders with Parquet splits);
    ``participants``: thread id → the logins of its participants (checked in every text column)."""
    if not root.is_dir():
        raise UserError(f"not a datasets folder: {root}")
    found = {n: _splits(root, n) for n in ("sft", "dpo", "eval")}
    if not any(found.values()):
        raise UserError(f"{root} holds no sft/, dpo/ or eval/ Parquet splits (run `reprodiag build` first)")
    report: dict[str, Any] = {"datasets": {}, "checks": {}}
    plates = {"sft": Boilerplate(), "dpo": Boilerplate()}
    kept_answers: dict[str, list[str]] = {"sft": [], "dpo": []}
    train_repos: set[str] = set()
    leak_rows = pii_rows = 0
    eval_repos: set[str] = set()
    for name, splits in found.items():
        for split, path in splits.items():  # one split in memory at a time
            rows = _rows(path)
            if name == "eval":
                eval_repos.update(str(r.get("source_thread") or "").split("#")[0] for r in rows)
            prompts, answers, texts = [], [], []
            for r in rows:
                if name == "sft":
                    p, a = _turns(r.get("messages"), ("system", "user")), _turns(r.get("messages"), ("assistant",))
                elif name == "dpo":
                    p, a = _turns(r.get("prompt"), ("system", "user")), _turns(r.get("chosen"), ("assistant",))
                    texts.append(_turns(r.get("rejected"), ("assistant",)))
                else:
                    p = "\n".join(str(r.get(k) or "") for k in ("environment", "paper", "symptom", "tried"))
                    a = str(r.get("gold_root_cause") or "")
                prompts.append(p)
                answers.append(a)
                if name != "eval":
                    train_repos.add(str(r.get("repo") or ""))
            people = participants or {}
            tid = [str(r.get("thread_id") or r.get("source_thread") or "") for r in rows]
            leaks = [{"thread_id": t, "share": round(s, 3)}
                     for t, s in ((t, leak_share(p, cause_of(a))) for t, p, a in zip(tid, prompts, answers, strict=True))
                     if s > LEAK_THRESHOLD]
            pii = [{"thread_id": t, "kinds": k}
                   for t, k in ((t, pii_hits("\n".join([p, a] + ([x] if x else [])), people.get(t)))
                                for t, p, a, x in zip(tid, prompts, answers, texts or [""] * len(rows), strict=True))
                   if k]
            frags = sum(fragment_lines(a) for a in answers) if name != "eval" else 0
            if name in plates:
                plates[name].add(answers)
                kept_answers[name] += [" \n ".join(answer_sentences(a)) for a in answers]
            leak_rows += len(leaks)
            pii_rows += len(pii)
            block: dict[str, Any] = {
                "rows": len(rows),
                "duplicate_prompts": len(prompts) - len(set(prompts)),
                "duplicate_answers": len(answers) - len(set(answers)),
                "near_duplicate_prompts": near_duplicate_rows(prompts),
                "near_duplicate_answers": near_duplicate_rows(answers),
                "leak_rows": leaks, "pii_rows": pii, "fragment_lines": frags,
                "error_types": dict(Counter(str(r.get("error_type")) for r in rows)),
            }
            if name == "sft":
                block["tiers"] = dict(Counter(str(r.get("tier")) for r in rows))
                block["resolution"] = dict(Counter(str(r.get("resolution_type")) for r in rows))
            if name in ("sft", "dpo"):
                block["verified"] = sum(bool(r.get("verified")) for r in rows)
            if name == "dpo" and rows:
                lens = [len(a) / max(len(t), 1) for a, t in zip(answers, texts, strict=True)]
                block["length_ratio_median"] = round(float(np.median(lens)), 3)
                block["rejected_max_repeats"] = max(Counter(texts).values())
                block["shortcut_accuracy"] = shortcut_accuracy(answers, texts)
            if name == "eval":
                block["non_declarative_gold"] = [r.get("id") for r in rows if not declarative(str(r.get("gold_root_cause")))]
                block["symptoms_without_values"] = sum(not re.search(r"\d", str(r.get("symptom") or "").split("\n")[0])
                                                       for r in rows)
            report["datasets"][f"{name}/{split}"] = block
    dpo = [b for k, b in report["datasets"].items() if k.startswith("dpo/") and b["rows"]]
    eval_blocks = [b for k, b in report["datasets"].items() if k.startswith("eval/")]
    checks = {
        "leak_rows": leak_rows, "pii_rows": pii_rows,
        "shortcut_accuracy": max((b["shortcut_accuracy"] for b in dpo if b["shortcut_accuracy"] is not None),
                                 default=None),
        "length_ratio_median": min((b["length_ratio_median"] for b in dpo), default=None),
        "length_ratio_median_max": max((b["length_ratio_median"] for b in dpo), default=None),
        "rejected_max_repeats": max((b["rejected_max_repeats"] for b in dpo), default=0),
        "non_declarative_gold": sum(len(b["non_declarative_gold"]) for b in eval_blocks),
        "repo_overlap": len(eval_repos & train_repos - {""}),
        "fragment_lines": sum(b["fragment_lines"] for b in report["datasets"].values()),
        "near_duplicate_prompts": sum(b["near_duplicate_prompts"] for b in report["datasets"].values()),
        "near_duplicate_answers": sum(b["near_duplicate_answers"] for b in report["datasets"].values()),
        "participants_checked": participants is not None,
    }
    report["answers"] = {}
    for name, plate in plates.items():
        f = plate.figures()
        common = f.pop("_common")
        holding = sum(any(t in common for t in a.split(" \n ")) for a in kept_answers[name])
        f["common_rows_share"] = round(holding / max(f["rows"], 1), 4)
        report["answers"][name] = f
    checks["common_sentence_share"] = max((report["answers"][n]["most_common_share"] for n in plates), default=0.0)
    checks["common_rows_share"] = max((report["answers"][n]["common_rows_share"] for n in plates), default=0.0)
    failed = []
    for k in ("leak_rows", "pii_rows", "non_declarative_gold", "repo_overlap", "fragment_lines"):
        if checks[k] > LIMITS[k]:
            failed.append(k)
    if checks["shortcut_accuracy"] is not None and checks["shortcut_accuracy"] > LIMITS["shortcut_accuracy"]:
        failed.append("shortcut_accuracy")
    if checks["length_ratio_median"] is not None and (checks["length_ratio_median"] < LIMITS["length_ratio_low"]
                                                      or checks["length_ratio_median_max"] > LIMITS["length_ratio_high"]):
        failed.append("length_ratio")
    if checks["rejected_max_repeats"] > LIMITS["rejected_max_repeats"]:
        failed.append("rejected_repeats")
    if max(checks["common_sentence_share"], checks["common_rows_share"]) > LIMITS["common_sentence_share"]:
        failed.append("common_sentences")
    report["mixes"], checks["mix_rows_wrong"] = mix_report(root, found["sft"])
    if checks["mix_rows_wrong"] > LIMITS["mix_rows_wrong"]:
        failed.append("mixes")
    report["checks"] = checks
    report["failed"] = failed
    return report


def mix_report(root: Path, sft_splits: dict[str, Path]) -> tuple[dict[str, Any], int]:
    """The SFT mixes found under ``root`` (mix → split → ``{rows, resolution, not_in_sft, off_mix}``) and the
    number of wrong rows over all of them: a row whose thread id is not in ``sft``'s same split, or whose
    resolution type the mix does not hold. A build without mix folders (older builds) reports none."""
    import polars as pl

    from reprodiag.mixes import SFT_MIXES

    out: dict[str, Any] = {}
    wrong = 0
    for mix in SFT_MIXES:
        splits = _splits(root, mix.name)
        if not splits:
            continue
        out[mix.name] = {}
        for split, path in splits.items():
            df = pl.read_parquet(path, columns=["thread_id", "resolution_type"])
            base = sft_splits.get(split)
            ids = set(pl.read_parquet(base, columns=["thread_id"])["thread_id"].to_list()) if base else set()
            not_in = sum(t not in ids for t in df["thread_id"].to_list())
            off = sum(r not in (mix.resolution or ()) for r in df["resolution_type"].to_list())
            out[mix.name][split] = {"rows": df.height, "not_in_sft": not_in, "off_mix": off,
                                    "resolution": dict(Counter(df["resolution_type"].to_list()))}
            wrong += not_in + off
    return out, wrong


def audit_summary_lines(rep: dict[str, Any]) -> list[str]:
    """The audit in a few lines for the dataset card: each figure with its limit and whether it passes."""
    c = rep["checks"]
    failed = set(rep["failed"])

    def mark(key: str) -> str:
        return "FAIL" if key in failed else "pass"

    def fmt(v: Any) -> str:
        return "n/a" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))

    rows = {k: b["rows"] for k, b in rep["datasets"].items()}
    return [
        "rows: " + ", ".join(f"{k} {v}" for k, v in rows.items()),
        f"rows whose prompt already holds the cause (share of cause words > {LEAK_THRESHOLD}): "
        f"{c['leak_rows']} ({mark('leak_rows')})",
        f"rows with personal data, secrets or participant names: {c['pii_rows']} ({mark('pii_rows')}"
        + ("" if c.get("participants_checked") else "; participant logins not checked") + ")",
        f"DPO shortcut probe (surface features only; 0.5 = no shortcut, limit {LIMITS['shortcut_accuracy']}): "
        f"{fmt(c['shortcut_accuracy'])} ({mark('shortcut_accuracy')})",
        f"DPO chosen/rejected median length ratio (limit {LIMITS['length_ratio_low']}–"
        f"{LIMITS['length_ratio_high']}): {fmt(c['length_ratio_median'])}–{fmt(c['length_ratio_median_max'])} "
        f"({mark('length_ratio')})",
        f"most pairs sharing one rejected text: {c['rejected_max_repeats']} (limit "
        f"{LIMITS['rejected_max_repeats']}, {mark('rejected_repeats')})",
        f"eval gold causes that are not declarative: {c['non_declarative_gold']} ({mark('non_declarative_gold')})",
        f"eval repositories also in training: {c['repo_overlap']} ({mark('repo_overlap')})",
        f"answer lines that are questions or fragments: {c['fragment_lines']} ({mark('fragment_lines')})",
        f"near-duplicate prompts / answers: {c['near_duplicate_prompts']} / {c['near_duplicate_answers']}",
        *(_plate_line(name, a) for name, a in rep.get("answers", {}).items() if a["rows"]),
        f"boilerplate: rows holding a sentence found in >= {COMMON_SENTENCE_ROWS:.0%} of the answers, most over "
        f"SFT and DPO chosen (limit {LIMITS['common_sentence_share']:.0%}): "
        f"{c.get('common_rows_share', 0.0):.1%} ({mark('common_sentences')})",
        *([f"SFT mix rows ({', '.join(rep['mixes'])}) that are not sft rows of their split or not of the mix's "
           f"resolution types: {c.get('mix_rows_wrong', 0)} ({mark('mixes')})"] if rep.get("mixes") else []),
    ]


def _plate_line(name: str, a: dict[str, Any]) -> str:
    what = "SFT answers" if name == "sft" else "DPO chosen answers"
    ln = a.get("length") or {}
    top = f' ("{a["most_common"][:80]}")' if a.get("most_common") else ""
    return (f"{what}: the most shared sentence is in {a['most_common_share']:.1%} of them{top}; "
            f"{a['common_rows_share']:.1%} hold a sentence found in >= {COMMON_SENTENCE_ROWS:.0%} of them; length "
            f"{ln.get('p10', 0)}–{ln.get('median', 0)}–{ln.get('p90', 0)} characters (p10–median–p90)")


def thread_logins(thread: Any) -> list[str]:
    """The logins of a thread's author and commenters (as stored, before redaction)."""
    out = [thread.author] if thread.author else []
    out += [c.author for c in thread.all_comments() if c.author and c.author not in out]
    return out


def participants_of(store: Any) -> dict[str, list[str]]:
    """Thread id → participant logins, from the stored threads of a workspace's scored records."""
    out: dict[str, list[str]] = {}
    for r in store.iter_scored(kept_only=False):
        t = store.get_thread(r.thread_id)
        if t is not None:
            out[r.thread_id] = thread_logins(t)
    return out


def run_audit(root: Path, *, strict: bool = False, participants: dict[str, list[str]] | None = None
              ) -> tuple[dict[str, Any], int]:
    """Audit ``root``, write ``root/audit.json``; exit code 1 with ``strict`` when a check failed."""
    rep = audit(Path(root), participants)
    (Path(root) / "audit.json").write_text(json.dumps(rep, indent=1, ensure_ascii=False, default=str) + "\n",
                                           encoding="utf-8")
    return rep, (1 if strict and rep["failed"] else 0)
