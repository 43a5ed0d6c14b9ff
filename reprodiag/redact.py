"""Redaction of secrets and personal data (core module: imports no stage).

Two entry levels:

* :func:`mask_secrets` — tokens and keys only (GitHub, OpenAI, Anthropic, AWS,
  Hugging Face, Slack, Google, JWTs, bearer tokens, credentials in URLs,
  private key blocks, high-entropy values in assignment context such as
  ``token=...``). ``extract`` calls it before any text goes to a model provider.
* :func:`redact_text` / :func:`redact_record` / :func:`redact_thread` /
  :func:`redact_doc` — the full redaction applied before anything leaves the
  workspace: the secrets above, generic high-entropy strings, e-mail
  addresses (not ``git@host`` SSH remotes such as ``git@github.com``), IPv4
  addresses (not 4-part versions such as ``cuDNN 8.9.2.26``), user names in
  home-directory paths, e-mail reply boilerplate, and GitHub user names.

Every masked span becomes ``[REDACTED_<KIND>]`` (kinds: see :data:`KINDS`),
except user names, which become stable per-thread placeholders:

    ``<role>_<n>`` where role is ``asker`` | ``maintainer`` | ``contributor``
    | ``bot`` (thread participants) or ``user`` (someone only @mentioned), and
    ``n`` counts people of that role in order of first appearance (the asker
    is ``asker_0``). Logins are replaced in three places only: author fields;
    ``@login`` mentions (case-insensitive; ``@alice`` becomes
    ``@maintainer_0``); and bare words equal to a participant's login, matched
    whole-word and case-sensitively, and only when the login looks like one
    (:func:`is_login_like`: digit, hyphen, underscore, mixed case, or 6+
    letters that are not a common word), so participants called ``data`` or
    ``model`` leave prose alone and ``owner/repo`` references survive.

Rules are plain regexes written in the common subset of Python ``re`` and
Rust ``regex`` (no look-around, no back-references; group references in
replacements use ``${n}``), so that the vectorized polars path in
``scoring`` applies the very same rules (:data:`PURE_RULES`) and both paths
give identical output. Rules that need a Python check (entropy, IP ranges,
placeholder values) are :data:`CHECKED_RULES`; they always run after the pure
rules, in both paths.

Redaction is idempotent: redacting redacted text changes nothing.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from reprodiag.schema import MAINTAINER_ASSOCIATIONS, Record, Thread, parse_record, parse_thread

# --------------------------------------------------------------------------- rules


@dataclass(frozen=True)
class Rule:
    """One redaction rule.

    ``replacement`` uses Rust syntax (``${1}``); :attr:`py_replacement` is the
    Python equivalent. ``check`` (checked rules only) receives the whole match
    and returns the replacement text, or ``None`` to leave the match as it is.
    ``secret``: part of :func:`mask_secrets`. ``anchor`` (optional, Python
    speed-up only): lower-case words, one of which (case-insensitively) occurs
    in the leading ``[A-Za-z_]`` run of every match, so that only the starts of
    runs holding one are tried (the result equals a full scan). ``needles`` (optional, speed-up of the
    vectorized path only): literals of which every match holds at least one, compared ASCII
    case-insensitively, so cells holding none are skipped; ``prefilter``: the same as a regex that every
    match contains (used when no literal is necessary).
    """

    kind: str
    pattern: str
    replacement: str = ""
    secret: bool = True
    check: Callable[[re.Match[str]], str | None] | None = None
    anchor: tuple[str, ...] = ()
    needles: tuple[str, ...] = ()
    prefilter: str | None = None
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)
    anchor_regex: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    _py_replacement: str = field(init=False, repr=False, compare=False, default="")

    def __post_init__(self) -> None:
        object.__setattr__(self, "regex", re.compile(self.pattern))
        object.__setattr__(self, "anchor_regex", re.compile(
            "(?i)" + "|".join(map(re.escape, self.anchor))) if self.anchor else None)
        if not self.replacement:
            object.__setattr__(self, "replacement", placeholder(self.kind))
        object.__setattr__(self, "_py_replacement", re.sub(r"\$\{(\d+)\}", r"\\g<\1>", self.replacement))

    @property
    def py_replacement(self) -> str:
        """``replacement`` in Python's ``re.sub`` syntax (``${1}`` → ``\\g<1>``), computed once."""
        return self._py_replacement


def placeholder(kind: str) -> str:
    return f"[REDACTED_{kind}]"


def shannon_entropy(s: str) -> float:
    """Bits per character of ``s`` (0.0 for the empty string)."""
    if not s:
        return 0.0
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


_PLACEHOLDER_VALUES = frozenset({
    "none", "null", "true", "false", "your_token", "your-token", "yourtoken", "your_api_key", "xxx", "xxxx",
    "changeme", "password", "secret", "token", "example", "redacted", "dummy", "test", "string",
})


_DOTTED_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$")


def _check_assignment(m: re.Match[str]) -> str | None:
    """``token = VALUE``: mask VALUE when it looks like a real credential."""
    key, value = m.group(1), m.group(3)
    low = value.lower().strip("'\"")
    if low in _PLACEHOLDER_VALUES or low.startswith(("os.", "env", "$", "<", "{", "getenv", "xxxx", "***")):
        return None
    if set(low) <= {"x", "*", "."}:
        return None
    if m.string[m.end():m.end() + 1] == "(" or _DOTTED_NAME.match(value):
        return None  # a call or an attribute path (tokenizer = AutoTokenizer.from_pretrained(...))
    is_password = re.search(r"(?i)pass|pwd", key) is not None
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    mixed_case = any(c.isupper() for c in value) and any(c.islower() for c in value)
    if is_password:
        ok = len(value) >= 4
    else:
        ok = len(value) >= 12 and has_alpha and (has_digit or mixed_case) and shannon_entropy(value) >= 3.0
    if not ok:
        return None
    return m.group(1) + m.group(2) + placeholder("SECRET")


def _check_high_entropy(m: re.Match[str]) -> str | None:
    """A long base62/base64 run with mixed classes and high entropy (not hex, not a word)."""
    s = m.group(0)
    upper = sum(c.isupper() for c in s)
    lower = sum(c.islower() for c in s)
    digit = sum(c.isdigit() for c in s)
    if upper < 2 or lower < 2 or digit < 2:
        return None
    if shannon_entropy(s) < 4.0:
        return None
    if "/" in s and any(len(seg) >= 3 and seg.isalpha() and seg.islower() for seg in s.split("/")):
        return None  # a path such as configs/ResNet50x4/train
    return placeholder("HIGH_ENTROPY")


_IP_KEEP = ("127.", "0.0.0.0", "255.255.255.255")
#: Names after which a dotted quad is a version (``cuDNN 8.9.2.26``, ``TensorRT-8.6.1.6``), not an address.
VERSION_CONTEXT_NAMES = frozenset({
    "cudnn", "libcudnn", "tensorrt", "trt", "nccl", "libnccl", "cuda", "cudatoolkit", "cublas", "cufft", "driver",
    "torch", "pytorch", "torchvision", "torchaudio", "tensorflow", "tensorflow-gpu", "tf", "keras", "jax",
    "jaxlib", "python", "numpy", "scipy", "transformers", "onnx", "onnxruntime", "openvino", "mkl", "gcc", "g++",
    "clang", "cmake", "protobuf", "triton", "xformers", "apex", "deepspeed", "mxnet", "paddle", "paddlepaddle",
    "opencv", "opencv-python", "pillow", "mmcv", "mmcv-full", "detectron", "release", "version", "ver", "build",
    "rev", "revision",
})
_PINS = ("==", ">=", "<=", "~=", "!=")
_ASCII_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def _version_context(before: str) -> bool:
    """Whether the text right before a dotted quad makes it a version.

    Version context: a pin (``==``, ``>=``, ...), a fifth part (``1.2.3.4.5``), a lone ``v``, or a name of
    :data:`VERSION_CONTEXT_NAMES` (case-insensitive, trailing digits ignored as in ``libcudnn8``) that starts
    a word, followed only by blanks and ``=:_-``.
    """
    if len(before) >= 2 and before[-1] == "." and before[-2] in "0123456789":
        return True
    low = before.rstrip(" \t").lower()
    if low.endswith(_PINS):
        return True
    if low.endswith("v") and (len(low) == 1 or low[-2] not in _ASCII_ALNUM):
        return True
    low = low.rstrip("=:_-").rstrip(" \t").rstrip("0123456789")
    start = len(low)
    while start > 0 and (low[start - 1] in _ASCII_ALNUM or low[start - 1] in "+-"):
        start -= 1
    word = low[start:]
    # the name may be a suffix of the word after a "-" or "+" ("nvidia-driver")
    return any(word[i:] in VERSION_CONTEXT_NAMES for i in range(len(word)) if i == 0 or word[i - 1] in "+-")


def _check_ip(m: re.Match[str]) -> str | None:
    """A dotted quad is an IPv4 address (masked) unless it is a version.

    Kept: an octet above 255 or with a leading zero; a version context right
    before it (:func:`_version_context`: a library name as in ``cuDNN 8.9.2.26``
    or ``TensorRT-8.6.1.6``, ``version``, ``v``, a pin such as ``==``); a fifth
    part (``1.2.3.4.5``); loopback, unspecified and broadcast addresses.
    """
    ip = m.group(0)
    if any(int(o) > 255 or (len(o) > 1 and o.startswith("0")) for o in ip.split(".")):
        return None
    if ip.startswith(_IP_KEEP):
        return None
    after = m.string[m.end():m.end() + 2]
    if len(after) == 2 and after[0] == "." and after[1].isascii() and after[1].isdigit():
        return None
    if _version_context(m.string[max(0, m.start() - 40):m.start()]):
        return None
    return placeholder("IP")


#: Secret patterns; order matters (specific before generic).
_SECRET_RULES: tuple[Rule, ...] = (
    Rule("PRIVATE_KEY",
         r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
         r"(?:(?s:.*?)-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|(?s:.*))", needles=("-----BEGIN",)),
    Rule("URL_CREDENTIALS", r"\b([A-Za-z][A-Za-z0-9+.\-]*://)[^\s/:@'\"<>]+:[^\s/@'\"<>]+@",
         "${1}[REDACTED_URL_CREDENTIALS]@", needles=("://",)),
    Rule("GITHUB_TOKEN", r"\b(?:gh[pousr]_[A-Za-z0-9]{20,255}|github_pat_[A-Za-z0-9_]{20,255})",
         needles=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    Rule("ANTHROPIC_KEY", r"\bsk-ant-[A-Za-z0-9_\-]{16,}", needles=("sk-ant-",)),
    Rule("OPENAI_KEY", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}", needles=("sk-",)),
    Rule("HF_TOKEN", r"\bhf_[A-Za-z0-9]{30,}", needles=("hf_",)),
    Rule("AWS_ACCESS_KEY", r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b", needles=("AKIA", "ASIA", "ABIA", "ACCA")),
    Rule("AWS_SECRET_KEY",
         r"(?i)(aws_?secret_?(?:access_?)?key[\"']?\s*[:=]\s*[\"']?)[A-Za-z0-9/+=]{40,}",
         "${1}[REDACTED_AWS_SECRET_KEY]", needles=("secret",)),
    Rule("SLACK_TOKEN", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", needles=("xox",)),
    Rule("GOOGLE_API_KEY", r"\bAIza[0-9A-Za-z_\-]{35}", needles=("AIza",)),
    Rule("JWT", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", needles=("eyJ",)),
    Rule("BEARER_TOKEN", r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=\-]{16,}", "${1}[REDACTED_BEARER_TOKEN]",
         needles=("bearer",)),
)

_L = r"[A-Za-z0-9._%+\-]"
#: An e-mail address whose local part is not ``git`` (``git@github.com:owner/repo`` is a public SSH remote).
_EMAIL_PATTERN = (
    rf"\b(?:{_L}{{4,}}|{_L}{{1,2}}|[A-FH-Za-fh-z0-9._%+\-]{_L}{_L}|[gG][A-HJ-Za-hj-z0-9._%+\-]{_L}"
    rf"|[gG][iI][A-SU-Za-su-z0-9._%+\-])@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{{2,}}\b"
)

#: Personal data patterns that need no Python check.
_PII_RULES: tuple[Rule, ...] = (
    Rule("EMAIL_BOILERPLATE",
         r"(?m)^[ \t>]*On [^\n]*?[0-9]{4}[^\n]*?(?:\n[^\n]*?)?wrote:[ \t]*\r?\n?(?:[ \t]*>[^\n]*\n?)*",
         " ", secret=False, needles=("wrote:",)),
    Rule("EMAIL_BOILERPLATE",
         r"(?m)^[ \t]*(?:—|--|-)?[ \t]*\r?\n?[ \t]*You are receiving this because[^\n]*(?:\n[^\n]*"
         r"(?:Reply to this email directly|view it on GitHub|unsubscribe|Triage notifications)[^\n]*)*",
         " ", secret=False, needles=("You are receiving this because",)),
    Rule("EMAIL", _EMAIL_PATTERN, secret=False, needles=("@",)),
    Rule("HOME_PATH",
         r"(/home/|/Users/|/mnt/[A-Za-z]/Users/|\b[A-Za-z]:[\\/]+Users[\\/]+)"
         r"[A-Za-z0-9._\-]+",
         "${1}[REDACTED_HOME_PATH]", secret=False, needles=("/home/", "Users")),
)

#: Regex rules applied verbatim in both paths, in this order.
PURE_RULES: tuple[Rule, ...] = _SECRET_RULES + _PII_RULES

#: Rules with a Python check, applied after :data:`PURE_RULES`, in this order.
CHECKED_RULES: tuple[Rule, ...] = (
    Rule("SECRET",
         r"(?i)\b([A-Za-z_]*(?:token|api_?key|apikey|secret|secret_?key|passwd|password|pwd|access_?key|auth_?key"
         r"|client_?secret|credentials?)s?[\"']?)(\s*[:=]\s*[\"']?)([A-Za-z0-9_\-./+=~!#%^&*]{4,})",
         check=_check_assignment, anchor=("token", "key", "secret", "passw", "pwd", "credential"),
         needles=("token", "key", "secret", "passw", "pwd", "credential")),
    Rule("IP", r"\b[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\b", secret=False, check=_check_ip,
         prefilter=r"[0-9]\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]"),
    Rule("HIGH_ENTROPY", r"[A-Za-z0-9+/]{32,}={0,2}", secret=False, check=_check_high_entropy),
)

KINDS: tuple[str, ...] = tuple(dict.fromkeys(r.kind for r in PURE_RULES + CHECKED_RULES)) + ("USER",)


# --------------------------------------------------------------------------- counts


@dataclass(frozen=True)
class RedactionCounts:
    """How many spans of each kind were masked (``USER``: user names replaced by placeholders)."""

    by_kind: Mapping[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.by_kind.values())

    def __add__(self, other: RedactionCounts) -> RedactionCounts:
        c = Counter(self.by_kind)
        c.update(other.by_kind)
        return RedactionCounts({k: v for k, v in sorted(c.items()) if v})

    @classmethod
    def of(cls, counter: Mapping[str, int]) -> RedactionCounts:
        return cls({k: v for k, v in sorted(counter.items()) if v})


# --------------------------------------------------------------------------- text


def apply_pure_rule(rule: Rule, text: str, counts: Counter[str]) -> str:
    new, n = rule.regex.subn(rule.py_replacement, text)
    if n:
        counts[rule.kind] += n
    return new


#: What ``(?i)[A-Za-z_]`` matches in Python (ASCII letters, ``_`` and four letters that case-fold to ASCII).
_WORD_RUN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_\u0130\u0131\u017f\u212a")


def _find_all(text: str, word: str) -> Iterator[int]:
    i = text.find(word)
    while i >= 0:
        yield i
        i = text.find(word, i + 1)


def _anchored_matches(rule: Rule, text: str) -> Iterator[re.Match[str]]:
    """The matches ``rule.regex.finditer`` gives, trying only the starts of runs that hold an anchor hit."""
    assert rule.anchor_regex is not None
    if text.isascii():
        low = text.lower()
        hits = sorted(i for w in rule.anchor for i in _find_all(low, w))
    else:
        hits = [a.start() for a in rule.anchor_regex.finditer(text)]
    starts: list[int] = []
    for s in hits:
        while s > 0 and text[s - 1] in _WORD_RUN:
            s -= 1
        if not starts or s > starts[-1]:
            starts.append(s)
    end = 0
    for s in starts:
        if s < end:
            continue
        m = rule.regex.match(text, s)
        if m is not None:
            end = m.end()
            yield m


def apply_checked_rule(rule: Rule, text: str, counts: Counter[str]) -> str:
    assert rule.check is not None
    matches = _anchored_matches(rule, text) if rule.anchor_regex is not None else rule.regex.finditer(text)
    parts: list[str] = []
    pos = 0
    for m in matches:
        out = rule.check(m)
        if out is None:
            continue
        counts[rule.kind] += 1
        parts.append(text[pos:m.start()])
        parts.append(out)
        pos = m.end()
    if not parts:
        return text
    parts.append(text[pos:])
    return "".join(parts)


def mask_secrets(text: str, counts: Counter[str] | None = None) -> str:
    """Replace tokens, keys and credentials in ``text`` by ``[REDACTED_<KIND>]``; everything else is kept.
    ``counts`` (optional) receives the masked spans per kind."""
    if not text:
        return text
    counts = Counter() if counts is None else counts
    for rule in PURE_RULES:
        if rule.secret:
            text = apply_pure_rule(rule, text, counts)
    for rule in CHECKED_RULES:
        if rule.secret:
            text = apply_checked_rule(rule, text, counts)
    return text


# --------------------------------------------------------------------------- people

ROLES = ("asker", "maintainer", "contributor", "bot", "user")
PLACEHOLDER_PATTERN = r"^(?:asker|maintainer|contributor|bot|user)_[0-9]+$"
_PLACEHOLDER_RE = re.compile(PLACEHOLDER_PATTERN)
#: Characters that may not come right before an ``@mention`` (so e-mails and ``git@host`` are not mentions).
MENTION_BEFORE_BLOCK = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.`/-")
#: The word after ``@``: a maximal ``[A-Za-z0-9_-]`` run, optionally ``[bot]``; no backtracking into it.
MENTION_WORD_PATTERN = r"[A-Za-z0-9_\-]+(?:\[bot\])?"
#: A valid GitHub login (alphanumerics and single inner hyphens), optionally an app's ``[bot]`` suffix.
LOGIN_PATTERN = r"^[A-Za-z0-9](?:-?[A-Za-z0-9])*(?:\[bot\])?$"
_LOGIN_RE = re.compile(LOGIN_PATTERN)
_MENTION_RE = re.compile(
    r"(?<![A-Za-z0-9_.`/\-])@((?>" + MENTION_WORD_PATTERN + r"))(?![A-Za-z0-9_(/\-]|\.[A-Za-z0-9_])")
#: ``@name`` words that are Python decorators, not people.
DECORATORS = frozenset({
    "property", "staticmethod", "classmethod", "dataclass", "abstractmethod", "wraps", "override",
    "cached_property", "lru_cache", "cache", "contextmanager", "pytest", "jit", "torch", "tf", "jax",
    "register", "overload", "final", "functools", "typing", "app", "param", "parametrize", "fixture",
})
#: Lower-case words of 6+ letters that are too common in ML threads to replace as bare logins.
COMMON_WORDS = frozenset("""
about across action actions active actually added adding address advance after again against agreed
algorithm already always amazing analysis anchor another answer answers anyone anything appear applied
approach arrays around article assert attention author authors automatic available average backend
backward baseline batches before behavior behaviour benchmark better between beyond binary bounding branch
bridge broken buffer bugfix builds button called camera cannot caption change changed changes channel
channels charge checked checks choice choose chrome circle claims classes client closed cluster coding
column commit common compare compute config configs confirm console content context control convert
correct counts create custom damage darknet dataset datasets debian debugs decode decoder deepmind
default defaults define degree delete demand depend deploy design detail detect detection details device
devices differ direct docker domain double driver during dynamic easily editor effect effort either
embedding enable encode encoder engine enough ensure entity epochs equals errors escape estimate events
except expect expert export extend extract facebook factor failed family faster feature features figure
filter finally finder fixing flexible follow follows forget format former forward frames friend fusion
future gained gather general generic getting github gitlab global google gradient graphics greedy ground
growth guides handle happen hardware header health height helper hidden higher history horizon hybrid
ignore images impact import improve include indeed inference inform inputs inside insight install
instance instead intent invalid issues itself kernel kernels labels ladder latest launch layers leader
league length letter lightning linear linked linux listen little loaded loader locale locked logger
logits looking losses machine mainly making manual manager mapping margin market master matrix matter
maximum medium member memory merged method methods metric metrics middle minimum mirror missing mistake
mixing mobile models module modules moment monitor months mostly motion moving native nature nearly
needed neural neurips notice number numbers numpy object office online openai option options oracle
origin output outputs padding paper papers params parent parser partial passed patched people period
person phrase picked player plugin pocket pointer points policy portal posted powers prefer pretty
prince print printer prior privacy private probably problem process produce profile prompt proper public
pull pulled python pytorch quality random ranges rather reader reason recall recent record reduce
refine region regular related release remote remove render repeat replay report request require rescue
reset result results return review reward robust rounds sample samples sampler saving scaled scheduler
school scores screen script scripts search second secret section select sender series server service
settings should signal silver simple single sizing socket solved source special speech spirit spring
square stable status steady stream street strict string strong studio subset summer supply support
switch symbol system tables target tensor tensorflow tested thanks thread threads ticket tokens toward
tracker traffic trained trainer training transformer transformers travel trials tricks triple tuning
unable unique united unless update updated upload useful values vector verify version vision visual
volume weight weights window winter within without worker worked working writer yellow
""".split())


def is_bot_login(login: str) -> bool:
    low = login.lower()
    return low.endswith(("[bot]", "-bot", "_bot")) or low in {"stale", "dependabot", "codecov", "github-actions"}


def is_login_like(login: str) -> bool:
    """Whether a participant login is replaced where it appears as a bare word (not only as ``@login``).

    True for 3+ character logins that contain a digit, hyphen or underscore,
    mix upper and lower case, or have 6+ characters and are not a common word
    (:data:`COMMON_WORDS`); so participants named ``data``, ``model`` or
    ``bert`` do not blank out ordinary prose. Bot logins (``name[bot]``) and
    placeholders are never replaced as bare words.
    """
    if len(login) < 3 or "[" in login or _PLACEHOLDER_RE.match(login):
        return False
    if any(c.isdigit() or c in "-_" for c in login):
        return True
    if any(c.isupper() for c in login) and any(c.islower() for c in login):
        return True
    return len(login) >= 6 and login.lower() not in COMMON_WORDS


class People:
    """Per-thread mapping login → placeholder (see module docstring for the scheme).

    Logins compare case-insensitively (GitHub logins are) for ``@mentions``
    and author fields. A placeholder maps to itself, so redaction is
    idempotent. :attr:`bare_logins`: the participants' logins (as first
    written) that are also replaced as bare words (:func:`is_login_like`);
    users only ``@mentioned`` are replaced in their ``@`` form only.
    """

    def __init__(self, participants: Iterable[tuple[str, str]] = ()) -> None:
        self._map: dict[str, str] = {}
        self._next: Counter[str] = Counter()
        self._bare: dict[str, str] = {}
        self._bare_todo: list[tuple[str, str]] = []  # decided when bare_logins is first read
        for login, role in participants:
            self.add(login, role)

    def add(self, login: str, role: str = "user") -> str:
        key = login.lower()
        if key in self._map:
            return self._map[key]
        if _PLACEHOLDER_RE.match(login):
            self._map[key] = login
            prefix, n = login.rsplit("_", 1)
            self._next[prefix] = max(self._next[prefix], int(n) + 1)
            return login
        role = role if role in ROLES else "user"
        ph = f"{role}_{self._next[role]}"
        self._next[role] += 1
        self._map[key] = ph
        if role != "user":
            self._bare_todo.append((login, ph))
        return ph

    def get(self, login: str | None) -> str | None:
        return None if login is None else self._map.get(login.lower())

    @property
    def bare_logins(self) -> Mapping[str, str]:
        if self._bare_todo:
            for login, ph in self._bare_todo:
                if is_login_like(login):
                    self._bare[login] = ph
            self._bare_todo.clear()
        return self._bare

    @property
    def logins(self) -> tuple[str, ...]:
        """Every known login (lower case), placeholders excluded."""
        return tuple(k for k, v in self._map.items() if k != v)


#: Characters that may not come right before / after a bare login (whole-word match).
BARE_BEFORE_BLOCK = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.@[")
BARE_AFTER_BLOCK = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def bare_spans(text: str, login: str) -> Iterator[tuple[int, int]]:
    """Whole-word, case-sensitive occurrences of ``login`` in ``text``.

    Whole word: the character before is not in ``[A-Za-z0-9_.@[-]`` and the one
    after not in ``[A-Za-z0-9_-]``; ``login/name`` (a repository reference)
    does not count.
    """
    start = text.find(login)
    n = len(login)
    while start >= 0:
        end = start + n
        before = text[start - 1] if start else ""
        after = text[end] if end < len(text) else ""
        repo_ref = after == "/" and end + 1 < len(text) and text[end + 1].isascii() and text[end + 1].isalnum()
        if before not in BARE_BEFORE_BLOCK and after not in BARE_AFTER_BLOCK and not repo_ref:
            yield start, end
        start = text.find(login, start + 1)


def redact_people(text: str, people: People, counts: Counter[str]) -> str:
    """Replace ``@mentions`` (anyone) and bare participant logins by placeholders.

    ``@name`` counts as a mention when ``name`` is a valid GitHub login (or a
    participant's login as recorded, e.g. an anonymised ``name_with_underscore``), the
    ``@`` does not follow a word character, ``.``, backtick, ``/`` or ``-``
    (e-mail addresses, ``git@github.com``) and the name is not followed by
    ``(``, ``/`` or ``.word`` (decorators, paths). Python decorator names
    (:data:`DECORATORS`) are kept unless they are a participant. Mentioned
    users who are not participants join ``people`` as ``user_<n>`` in order
    of first appearance. Bare logins: :attr:`People.bare_logins`, matched by
    :func:`bare_spans`.
    """
    if "@" in text:
        def mention(m: re.Match[str]) -> str:
            login = m.group(1)
            if not _LOGIN_RE.match(login) and people.get(login) is None:
                return m.group(0)
            if login.lower() in DECORATORS and people.get(login) is None:
                return m.group(0)
            counts["USER"] += 1
            return "@" + people.add(login, "user")

        text = _MENTION_RE.sub(mention, text)
    found = [x for x in people.bare_logins if x in text]
    if not found:
        return text
    taken: list[tuple[int, int, str]] = []
    for login in sorted(found, key=len, reverse=True):
        for a, b in bare_spans(text, login):
            if all(b <= s or a >= e for s, e, _ in taken):
                taken.append((a, b, people.bare_logins[login]))
    if not taken:
        return text
    counts["USER"] += len(taken)
    parts: list[str] = []
    pos = 0
    for a, b, ph in sorted(taken):
        parts.append(text[pos:a])
        parts.append(ph)
        pos = b
    parts.append(text[pos:])
    return "".join(parts)


def redact_checked(text: str, people: People | None, counts: Counter[str]) -> str:
    """The part of :func:`redact_text` after the pure rules (shared with the vectorized path)."""
    for rule in CHECKED_RULES:
        text = apply_checked_rule(rule, text, counts)
    if people is not None:
        text = redact_people(text, people, counts)
    return text


def redact_text(text: str, people: People | None = None, counts: Counter[str] | None = None) -> str:
    """Full redaction of one text. ``people`` (per thread) gets new @mentioned users added."""
    if not text:
        return text
    counts = Counter() if counts is None else counts
    for rule in PURE_RULES:
        text = apply_pure_rule(rule, text, counts)
    return redact_checked(text, people, counts)


# --------------------------------------------------------------------------- documents

#: Keys whose string values are identifiers, enums or timestamps, never free text.
SKIP_KEYS = frozenset({
    "thread_id", "repo", "error_type", "comment_id", "field", "kind", "state", "state_reason", "created_at",
    "updated_at", "closed_at", "role", "backend", "model", "prompt_version", "tier", "split", "duplicate_of",
    "resolution_type", "outcome", "verdict", "phase", "case_id", "id", "answer_id", "author_association",
    "url", "number", "labels", "category", "content_hash", "task_type", "drop_reason", "expected", "gpu",
    "is_reproduction", "signals",
})
#: Keys whose value is a GitHub login.
LOGIN_KEYS = frozenset({"author", "login"})
#: Keys whose whole value is kept: detected framework versions (``{"cudnn": "8.9.2.26"}``) are versions by
#: construction, not addresses or secrets.
SKIP_TREES = frozenset({"framework_versions"})


def redact_doc(doc: Any, people: People | None = None, counts: Counter[str] | None = None) -> Any:
    """Redact every free-text string in a JSON-like document (dicts, lists, scalars); returns a new one.

    Strings under :data:`SKIP_KEYS` and everything under :data:`SKIP_TREES` are kept; values under :data:`LOGIN_KEYS`
    become placeholders (unknown logins join ``people`` as ``contributor``).
    """
    counts = Counter() if counts is None else counts
    people = People() if people is None else people

    def walk(v: Any, key: str | None) -> Any:
        if isinstance(v, dict):
            return {k: x if k in SKIP_TREES else walk(x, k) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x, key) for x in v]
        if isinstance(v, str):
            if key in LOGIN_KEYS:
                known = people.get(v)
                if known is None:
                    known = people.add(v, "bot" if is_bot_login(v) else "contributor")
                if known != v:
                    counts["USER"] += 1
                return known
            if key in SKIP_KEYS:
                return v
            return redact_text(v, people, counts)
        return v

    return walk(doc, None)


def thread_people(thread: Thread | Mapping[str, Any]) -> People:
    """Participants of a thread: the author is the asker; others by association, bots by login."""
    doc = thread.model_dump(mode="json") if isinstance(thread, Thread) else thread
    people = People()
    author = doc.get("author")
    if author:
        people.add(author, "asker")

    def visit(comments: list[dict[str, Any]]) -> None:
        for c in comments:
            login = c.get("author")
            if login:
                if is_bot_login(login):
                    role = "bot"
                elif c.get("author_association") in MAINTAINER_ASSOCIATIONS:
                    role = "maintainer"
                else:
                    role = "contributor"
                people.add(login, role)
            visit(c.get("replies") or [])

    visit(doc.get("comments") or [])
    return people


def record_people(record: Record | Mapping[str, Any] | Any) -> People:
    """Participants of a record (``stats.participants``), the asker first: a ``Record``, its msgspec twin
    (:mod:`reprodiag.schema_mirror`) or its JSON document."""
    if not isinstance(record, Mapping):  # read the participants directly: dumping the record costs ~40 µs
        parts = [{"login": p.login, "role": p.role} for p in record.stats.participants]
    else:
        parts = ((record.get("stats") or {}).get("participants")) or []
    ordered = sorted(parts, key=lambda p: p.get("role") != "asker")
    return People((p["login"], p.get("role", "contributor")) for p in ordered if p.get("login"))


def mask_thread_secrets(thread: Thread) -> tuple[Thread, int]:
    """``thread`` with tokens and keys masked in its title, body and every comment and reply (what the
    workspace stores: credentials never rest there; personal data is redacted at export), and how many
    spans were masked."""
    counts: Counter[str] = Counter()

    def comments(cs: list[Any]) -> list[Any]:
        out = []
        for c in cs:
            body = mask_secrets(c.body, counts)
            replies = comments(c.replies)
            out.append(c if body == c.body and replies == c.replies else
                       c.model_copy(update={"body": body, "replies": replies}))
        return out

    title, body = mask_secrets(thread.title, counts), mask_secrets(thread.body, counts)
    new_comments = comments(thread.comments)
    n = sum(counts.values())
    if not n:
        return thread, 0
    return thread.model_copy(update={"title": title, "body": body, "comments": new_comments}), n


def redact_thread(thread: Thread) -> tuple[Thread, RedactionCounts]:
    """A redacted copy of ``thread`` (still a valid Thread) and what was masked."""
    counts: Counter[str] = Counter()
    doc = redact_thread_doc(thread.model_dump(mode="json"), counts)
    return parse_thread(doc), RedactionCounts.of(counts)


def redact_thread_doc(doc: dict[str, Any], counts: Counter[str] | None = None) -> dict[str, Any]:
    return redact_doc(doc, thread_people(doc), counts)


def redact_record(record: Record) -> tuple[Record, RedactionCounts]:
    """A redacted copy of ``record`` (still a valid Record) and what was masked."""
    counts: Counter[str] = Counter()
    doc = redact_record_doc(record.model_dump(mode="json"), counts)
    return parse_record(doc), RedactionCounts.of(counts)


def redact_record_doc(doc: dict[str, Any], counts: Counter[str] | None = None) -> dict[str, Any]:
    return redact_doc(doc, record_people(doc), counts)
