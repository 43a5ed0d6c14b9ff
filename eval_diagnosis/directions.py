"""Diagnosis *directions*: the vocabulary shared by eval-set construction, baselines and graders.

A direction is a short phrase naming where a reproduction gap comes from
("learning-rate warmup", "tokenized vs detokenized BLEU"). Text is first
normalised (:func:`normalize`: NFKC, lower case, common Chinese terms mapped to
English, synonyms folded: lr/learning rate, bs/batch size, fp16/AMP/mixed
precision, tokenizer/tokenization …), then matched against :data:`CONCEPTS`,
each of which belongs to one or more of the five error types. Generic concepts
("hyperparameters", "the data") identify a type but are too vague to count as
naming a root cause.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

TAXONOMY_PATH = Path(__file__).resolve().parent / "data" / "taxonomy.json"


def _load_taxonomy(path: Path = TAXONOMY_PATH) -> dict:
    """The shared cause taxonomy (``eval_diagnosis/data/taxonomy.json``); a missing or malformed file is a
    one-line UserError."""
    from reprodiag.errors import UserError

    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if doc.get("format") != "reprodiag-taxonomy-1":
            raise ValueError("not a reprodiag-taxonomy-1 file")
        for c in doc["concepts"]:
            re.compile(c["pattern"])
        return doc
    except FileNotFoundError:
        raise UserError(f"cause taxonomy not found: {path}") from None
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, re.error) as exc:
        raise UserError(f"malformed cause taxonomy {path}: {' '.join(str(exc).split())[:160]}") from None


_TAXONOMY = _load_taxonomy()

#: Chinese (and a few full-width) terms → English, applied before synonym folding.
_ZH: tuple[tuple[str, str], ...] = tuple((zh, f" {en} ") for zh, en in _TAXONOMY["translations"])

#: Synonym folding on normalised text (regex → canonical token). Order matters: longer phrases first.
_SYNONYMS: tuple[tuple[str, str], ...] = tuple((rx, f" {tok} ") for rx, tok in _TAXONOMY["synonyms"])

_SYN_RE = [(re.compile(p), r) for p, r in _SYNONYMS]
_NON_WORD = re.compile(r"[^0-9a-z\u4e00-\u9fff.]+")
_STRAY_DOT = re.compile(r"(?<![0-9])\.|\.(?![0-9])")
_SPACES = re.compile(r"\s+")


def normalize(text: str) -> str:
    """Lower-cased, NFKC, Chinese terms translated, punctuation → spaces, synonyms folded to one token."""
    t = unicodedata.normalize("NFKC", text or "").lower()
    for zh, en in _ZH:
        if zh in t:
            t = t.replace(zh, en)
    t = t.replace("_", " ").replace("-", " ")
    t = _NON_WORD.sub(" ", t)
    t = _STRAY_DOT.sub(" ", t)
    t = " " + _SPACES.sub(" ", t).strip() + " "
    for rx, rep in _SYN_RE:
        t = rx.sub(rep, t)
    return _SPACES.sub(" ", t).strip()


@dataclass(frozen=True)
class Concept:
    """A named direction. ``types``: error types it belongs to (first = primary); ``generic``: too vague
    to count as naming a root cause on its own."""

    id: str
    types: tuple[str, ...]
    pattern: str
    phrase: str
    generic: bool = False
    confusable_with: tuple[str, ...] = ()

    @property
    def regex(self) -> re.Pattern[str]:
        return _compiled(self.pattern)


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


_H, _D, _E, _F, _S = "hyperparameter", "data", "evaluation_protocol", "framework_version", "seed_hardware"

CONCEPTS: tuple[Concept, ...] = tuple(
    Concept(c["id"], tuple(c["types"]), c["pattern"], c["phrase"], bool(c.get("generic", False)),
            tuple(c.get("confusable_with", ()))) for c in _TAXONOMY["concepts"])

CONCEPT_BY_ID: dict[str, Concept] = {c.id: c for c in CONCEPTS}


def concepts_in(text: str, *, normalized: bool = False) -> list[Concept]:
    """Concepts whose pattern occurs in ``text``, in :data:`CONCEPTS` order."""
    t = text if normalized else normalize(text)
    padded = f" {t} "
    return [c for c in CONCEPTS if c.regex.search(padded)]


def specific(concepts: list[Concept]) -> list[Concept]:
    return [c for c in concepts if not c.generic]


def type_votes(concepts: list[Concept]) -> dict[str, float]:
    """Error-type evidence of a set of concepts: primary type 1.0, secondary 0.5; generic concepts count 0.5."""
    votes: dict[str, float] = {}
    for c in concepts:
        for i, t in enumerate(c.types):
            w = (1.0 if i == 0 else 0.5) * (0.5 if c.generic else 1.0)
            votes[t] = votes.get(t, 0.0) + w
    return votes


def infer_type(text: str) -> str | None:
    """The most likely error type named by ``text`` (None when no concept occurs)."""
    votes = type_votes(concepts_in(text))
    if not votes:
        return None
    return max(votes.items(), key=lambda kv: (kv[1], -_TYPE_ORDER.index(kv[0])))[0]


_TYPE_ORDER = [_H, _D, _E, _F, _S, "other"]

# --------------------------------------------------------------------------- content tokens

STOPWORDS = frozenset(
    """a an the of to in on for with and or but not no is are was were be been being it its this that these those
    as at by from into than then so such very can could may might should would will shall do does did done have has
    had having i you we they he she my your our their me us them there here what which who whom why how when where
    also only just more most less much many some any all each both other another same different one two use used
    using uses model models training train trained result results paper papers reported report reports issue issues
    problem problems because since due cause caused causes reason likely possibly probably maybe perhaps check
    checking make sure try tried value values number numbers get got obtain obtained performance score scores lower
    higher low high gap difference differences mismatch vs versus setting set via e.g i.e etc default defaults correct
    wrong right way ways thing things need needs needed see seems seem look looks like e g vs. direction directions
    diagnosis root cause fix fixed code repo repository github original author authors official implementation
    accuracy bleu rouge f1 map top 1 5 acc metric metrics reproduce reproduced reproduction reproducing run runs
    running while whereas instead which whose their there about after before under over between within without
    still again against though constants constant images sentences tokens predictions output
    outputs scores correctly properly actually although however user users person someone people setup""".split()
)

#: Canonical tokens produced by synonym folding (not informative as key terms on their own).
_CANONICAL = frozenset(r.strip() for _p, r in _SYNONYMS)


def _stem(tok: str) -> str:
    if len(tok) <= 4 or not tok.isalpha():
        return tok
    for suf in ("ization", "isation", "ations", "ation", "ings", "ing", "ers", "ies", "ed", "es", "er", "s"):
        if tok.endswith(suf) and len(tok) - len(suf) >= 3:
            return tok[: -len(suf)]
    return tok


def content_tokens(text: str, *, normalized: bool = False) -> set[str]:
    """Stemmed, synonym-folded tokens of ``text`` without stopwords (Chinese runs kept whole)."""
    t = text if normalized else normalize(text)
    return {_stem(w) for w in t.split() if w not in STOPWORDS and len(w) > 1}


#: Words that are common in any ML text, so they are weak evidence on their own.
_COMMON = frozenset(_stem(w) for w in """data dataset training test eval lr bs gpu version pytorch batch image images
    text input inputs output outputs loss layer layers network weights weight step steps size learning rate""".split())


_KEY_STOP = frozenset("""table figure fig section appendix eq equation readme paper step steps the this that
    with our we you yes no issue true false none null nan inf self default defaults please thanks note
    before after when then also however since because instead while both either which what where there
    here these those only just even still""".split())


def key_terms(text: str, limit: int = 6) -> list[str]:
    """Distinctive terms of a root cause: identifiers (digits, underscores, dots, hyphens: ``align_corners``,
    ``multi-bleu.perl``, ``13a``) and names written with capitals mid-sentence (``Pillow``, ``CTC``).
    Plain lower-case words are left to the concept phrases: they are too often incidental."""
    raw = unicodedata.normalize("NFKC", text or "")
    out: list[str] = []

    def add(tok: str) -> None:
        low = tok.lower().strip(".-_")
        if (len(low) >= 2 and low not in out and low not in STOPWORDS and low not in _KEY_STOP
                and not re.fullmatch(r"top\d|f1|v\d|\d+(?:\.\d+)?[kmx%]?|\d+(?:st|nd|rd|th)", low)):
            out.append(low)

    for tok in re.findall(r"[A-Za-z][A-Za-z0-9]*(?:[-_.][A-Za-z0-9]+)+|[A-Za-z]+\d[\w.]*|\d+[A-Za-z]+\w*", raw):
        add(tok)
    for m in re.finditer(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-z]+[A-Z]\w*|[A-Z]{2,}\w*|[A-Z][a-z]{3,})\b", raw):
        if raw[max(0, m.start() - 2):m.start()].strip() not in (".", "!", "?", ":"):
            add(m.group(1))
    return out[:limit]


def acceptable_directions(root_cause: str, error_type: str, *, extra: list[str] | None = None) -> list[str]:
    """Phrases a correct answer may name: the concepts the root cause mentions (their canonical phrase), the
    root cause's distinctive key terms, and ``extra`` (e.g. the thread's confirmed hypotheses).

    Generic concepts are never listed, so vague answers ("check the hyperparameters") do not match.
    The type's own generic phrase is added only when the root cause names no specific concept.
    """
    out: list[str] = []

    def add(p: str) -> None:
        p = " ".join(p.split())
        if p and p.lower() not in (x.lower() for x in out):
            out.append(p)

    found = specific(concepts_in(root_cause))
    in_type = [c for c in found if error_type in c.types]
    for c in in_type + [c for c in found if c not in in_type]:
        add(c.phrase)
    terms = key_terms(root_cause)
    for t in terms:
        add(t)
    for e in extra or []:
        add(e[:200])
    if not found and not terms:
        add(root_cause[:200])
    return out
