"""``reprodiag audit DATASETS_DIR``: read built datasets the way a trainer would and report what would teach
the wrong thing. Per dataset and split:

* rows, exact duplicates of prompts and of answers;
* leakage: per row, the share of the answer's content words (the SFT assistant turn, the DPO chosen answer,
  the eval gold root cause) that already appear in the prompt; rows above ``LEAK_THRESHOLD`` are listed with
  their thread id;
* PII and secrets in every text column: e-mails, tokens and keys, IPs, home paths (the redaction rules),
  @mentions, and names in greetings and sign-offs ("Hi Wei", "Thanks, Anna");
* DPO shortcuts: a cross-validated logistic classifier on surface features only (length, lines, bullets,
  section markers, question marks) told which of a pair is the chosen answer (0.5 = no shortcut), the
  chosen / rejected median length ratio, and how often one rejected text repeats;
* eval items: the gold root cause is a declarative cause (not a question, greeting or instruction), and no
  eval repository is also a training repository;
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

LEAK_THRESHOLD = 0.6
LIMITS = {"leak_rows": 0, "pii_rows": 0, "shortcut_accuracy": 0.65, "length_ratio_low": 0.8,
          "length_ratio_high": 1.25, "rejected_max_repeats": 2, "non_declarative_gold": 0, "repo_overlap": 0}

_WORD = re.compile(r"[a-z][a-z0-9_.-]{3,}")
_STOP = frozenset("""this that with from have were been they their there what which when where will would should
could about into than then them these those your yours also only just very more most some such other because
while after before over under between paper model training results result reported number numbers same does
doesn make sure check using used uses""".split())
_MENTION = re.compile(r"(?<![\w.])@[A-Za-z0-9][A-Za-z0-9-]{1,38}\b")
_GREETING = re.compile(r"(?:^|\n)\s*(?i:hi|hello|hey|dear|thanks|thank you|cheers|best|regards)[,!]?\s+"
                       r"(?!(?i:everyone|all|team|there|guys|folks|for)\b)([A-Z][a-z]{2,})\b")
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


def pii_hits(text: str) -> list[str]:
    """Kinds of personal data or secrets found in ``text``."""
    from reprodiag.redact import redact_text

    kinds = []
    counts: Counter[str] = Counter()
    redact_text(text, None, counts)
    kinds += [k.lower() for k, v in counts.items() if v]
    if _MENTION.search(text):
        kinds.append("mention")
    if _GREETING.search(text):
        kinds.append("greeting_name")
    return kinds


def declarative(cause: str) -> bool:
    """A statement of a cause: not a question, not an instruction or greeting."""
    c = (cause or "").strip()
    return bool(c) and not c.rstrip().endswith("?") and not _QUESTION_START.match(c) and not _INSTRUCTION_START.match(c)


def _surface(text: str) -> list[float]:
    lines = text.splitlines()
    return [len(text) / 1000.0, len(lines) / 10.0, sum(ln.lstrip().startswith(("-", "*")) for ln in lines) / 5.0,
            float("Fix:" in text), float("Checked and confirmed" in text), float("Worth checking" in text),
            text.count("?") / 3.0, float("Root cause:" in text)]


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


def _rows(root: Path, name: str) -> dict[str, list[dict[str, Any]]]:
    import polars as pl

    out: dict[str, list[dict[str, Any]]] = {}
    for f in sorted((root / name).glob("*.parquet")):
        out[f.stem] = pl.read_parquet(f).to_dicts()
    return out


def audit(root: Path) -> dict[str, Any]:
    """The audit of one build output folder (``sft``, ``dpo``, ``eval`` sub-folders with Parquet splits)."""
    if not root.is_dir():
        raise UserError(f"not a datasets folder: {root}")
    found = {n: _rows(root, n) for n in ("sft", "dpo", "eval")}
    if not any(found.values()):
        raise UserError(f"{root} holds no sft/, dpo/ or eval/ Parquet splits (run `reprodiag build` first)")
    report: dict[str, Any] = {"datasets": {}, "checks": {}}
    train_repos: set[str] = set()
    leak_rows = pii_rows = 0
    for name, splits in found.items():
        for split, rows in splits.items():
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
            leaks = [{"thread_id": r.get("thread_id") or r.get("source_thread"), "share": round(s, 3)}
                     for r, s in ((r, leak_share(p, a)) for r, p, a in zip(rows, prompts, answers, strict=True))
                     if s > LEAK_THRESHOLD]
            pii = [{"thread_id": r.get("thread_id") or r.get("source_thread"), "kinds": k}
                   for r, k in ((r, pii_hits("\n".join([p, a] + ([t] if t else []))))
                                for r, p, a, t in zip(rows, prompts, answers, texts or [""] * len(rows), strict=True)) if k]
            leak_rows += len(leaks)
            pii_rows += len(pii)
            block: dict[str, Any] = {
                "rows": len(rows),
                "duplicate_prompts": len(prompts) - len(set(prompts)),
                "duplicate_answers": len(answers) - len(set(answers)),
                "leak_rows": leaks, "pii_rows": pii,
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
            report["datasets"][f"{name}/{split}"] = block
    dpo = [b for k, b in report["datasets"].items() if k.startswith("dpo/") and b["rows"]]
    eval_blocks = [b for k, b in report["datasets"].items() if k.startswith("eval/")]
    eval_repos = {str(r.get("source_thread") or "").split("#")[0] for rows in found["eval"].values() for r in rows}
    checks = {
        "leak_rows": leak_rows, "pii_rows": pii_rows,
        "shortcut_accuracy": max((b["shortcut_accuracy"] for b in dpo if b["shortcut_accuracy"] is not None),
                                 default=None),
        "length_ratio_median": min((b["length_ratio_median"] for b in dpo), default=None),
        "length_ratio_median_max": max((b["length_ratio_median"] for b in dpo), default=None),
        "rejected_max_repeats": max((b["rejected_max_repeats"] for b in dpo), default=0),
        "non_declarative_gold": sum(len(b["non_declarative_gold"]) for b in eval_blocks),
        "repo_overlap": len(eval_repos & train_repos - {""}),
    }
    failed = []
    for k in ("leak_rows", "pii_rows", "non_declarative_gold", "repo_overlap"):
        if checks[k] > LIMITS[k]:
            failed.append(k)
    if checks["shortcut_accuracy"] is not None and checks["shortcut_accuracy"] > LIMITS["shortcut_accuracy"]:
        failed.append("shortcut_accuracy")
    if checks["length_ratio_median"] is not None and (checks["length_ratio_median"] < LIMITS["length_ratio_low"]
                                                      or checks["length_ratio_median_max"] > LIMITS["length_ratio_high"]):
        failed.append("length_ratio")
    if checks["rejected_max_repeats"] > LIMITS["rejected_max_repeats"]:
        failed.append("rejected_repeats")
    report["checks"] = checks
    report["failed"] = failed
    return report


def run_audit(root: Path, *, strict: bool = False) -> tuple[dict[str, Any], int]:
    """Audit ``root``, write ``root/audit.json``; exit code 1 with ``strict`` when a check failed."""
    rep = audit(Path(root))
    (Path(root) / "audit.json").write_text(json.dumps(rep, indent=1, ensure_ascii=False, default=str) + "\n",
                                           encoding="utf-8")
    return rep, (1 if strict and rep["failed"] else 0)
