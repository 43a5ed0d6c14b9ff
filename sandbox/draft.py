"""Drafting ReplaySpecs from diagnosis records (``reprodiag replay --draft``).

A record is replayable when it names the repository, quotes a command in a
code block, gives the paper's and the obtained value, and states a concrete
fix: a command-line flag (``--lr 0.001``, ``--tokenize=13a``) or a config
assignment (``lr: 0.001`` / ``lr = 0.001``). Drafts are proposals for review:
they clone the repository, run the quoted command, and apply the fix by
appending the flag (argparse-style last-wins) or by rewriting the key in the
config files that contain it.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field

from reprodiag.errors import UserError
from reprodiag.schema import Record, StageReport
from reprodiag.store import Store
from sandbox.spec import parse_spec

_FENCE = re.compile(r"```[^\n`]*\n(.*?)```", re.S)
_INLINE = re.compile(r"`([^`\n]{3,200})`")
_CMD_START = re.compile(r"^\s*(?:\$\s*|>>>\s*)?((?:python3?|bash|sh|torchrun|accelerate launch|deepspeed|"
                        r"CUDA_VISIBLE_DEVICES=\S+\s+python3?|fairseq-\w+|sacrebleu|\./\S+\.sh)\b.*)$")
_FLAG = re.compile(r"(?<![\w-])(--[A-Za-z][\w.-]*)(?:[ =]([^\s`'\",;)]+))?")
_ASSIGN = re.compile(r"(?<![\w.-])([A-Za-z_][\w.]*)\s*(?:=|:)\s*([-+]?\d[\w.+-]*|'[^']*'|\"[^\"]*\"|true|false|"
                     r"True|False)")
_LOWER_BETTER = re.compile(r"(?i)\b(loss|perplexity|ppl|error|err|fid|wer|cer|mse|mae|rmse|latency)\b")


@dataclass(frozen=True)
class Draft:
    """A drafted case (``toml`` set) or why the record is not replayable (``missing``)."""

    case_id: str
    thread_id: str
    toml: str | None = None
    spec: dict[str, object] = field(default_factory=dict)
    missing: tuple[str, ...] = ()


def case_id_for(thread_id: str) -> str:
    """``owner/name#12`` → ``owner-name-12`` (lower case, safe as a directory name)."""
    slug = re.sub(r"[^a-z0-9]+", "-", thread_id.lower()).strip("-")
    return slug[:120] or "case"


def _texts(r: Record) -> list[str]:
    out = [r.problem_statement, r.tried or "", r.environment or ""]
    out += [e.quote for e in r.evidence]
    out += [h.text for h in r.hypothesis_chain]
    return [t for t in out if t]


def _fix_texts(r: Record) -> list[str]:
    out = [r.resolution or "", r.root_cause or ""]
    out += [h.text for h in r.hypothesis_chain if h.outcome == "confirmed"]
    out += [e.quote for e in r.evidence if e.field in ("resolution", "root_cause")]
    return [t for t in out if t]


def find_command(texts: list[str]) -> str | None:
    """The first shell command inside a fenced code block (or, failing that, inline code)."""
    blocks = [b for t in texts for b in _FENCE.findall(t)]
    blocks += [m for t in texts for m in _INLINE.findall(t)]
    for block in blocks:
        lines = block.replace("\\\n", " ").splitlines()
        for line in lines:
            m = _CMD_START.match(line)
            if m:
                return " ".join(m.group(1).split())
    return None


def find_fix(texts: list[str], command: str | None) -> tuple[str, dict[str, str]] | None:
    """A concrete fix: ("flags", {flag: value}) or ("config", {key: value}); None if there is none."""
    for t in texts:
        for code in _FENCE.findall(t) + _INLINE.findall(t) + [t]:
            flags = {f: (v or "") for f, v in _FLAG.findall(code)}
            if flags and (command is None or any(flags[f] for f in flags) or len(flags) == 1):
                return "flags", flags
    for t in texts:
        for code in _FENCE.findall(t) + _INLINE.findall(t):
            pairs = {k: v for k, v in _ASSIGN.findall(code) if not k[0].isdigit()}
            if pairs:
                return "config", pairs
    return None


def _toml_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def _metric_regex(metric: str) -> str:
    name = re.escape(metric.strip()) if metric.strip() else r"\w+"
    return rf"(?i){name}[^0-9\n-]{{0,30}}(-?[0-9]+(?:\.[0-9]+)?)"


def _task_type(metric: str) -> str:
    m = metric.lower()
    if re.search(r"bleu|rouge|meteor|chrf|cider|bertscore|ter\b", m):
        return "nlp_generation"
    if re.search(r"fid|inception|\bis\b|kid", m):
        return "generative"
    if re.search(r"reward|return|episode", m):
        return "rl"
    return "deterministic"


def draft_case(r: Record) -> Draft:
    """Propose a ReplaySpec for one record, or list what is missing (pure)."""
    cid = case_id_for(r.thread_id)
    missing: list[str] = []
    if not r.is_reproduction:
        missing.append("not a paper-reproduction thread")
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", r.repo or ""):
        missing.append("repository URL")
    command = find_command(_texts(r) + _fix_texts(r))
    if command is None:
        missing.append("a command in a code block")
    if r.symptom.paper_value is None:
        missing.append("paper value")
    if r.symptom.obtained_value is None:
        missing.append("obtained value")
    fix = find_fix(_fix_texts(r), command)
    if fix is None:
        missing.append("a concrete fix (flag or config change)")
    if missing:
        return Draft(cid, r.thread_id, missing=tuple(missing))
    assert command is not None and fix is not None and r.symptom.paper_value is not None
    metric = r.symptom.metric or "metric"
    kind, values = fix
    if kind == "flags":
        args = " ".join(f"{f} {shlex.quote(v)}" if v else f for f, v in values.items())
        run_cmd = f"{command} $(cat .reprodiag_fix_args 2>/dev/null)"
        fix_cmd = f"printf '%s' {shlex.quote(args)} > .reprodiag_fix_args"
    else:
        run_cmd = command
        edits = []
        for k, v in values.items():
            key = re.escape(k.split(".")[-1])
            val = v.replace("/", r"\/").replace("&", r"\&")
            edits.append(f"-e 's/^\\([[:space:]]*{key}[[:space:]]*[:=][[:space:]]*\\).*/\\1{val}/'")
        sed = "sed -i " + " ".join(edits)
        keys = "\\|".join(re.escape(k.split(".")[-1]) for k in values)
        fix_cmd = (f"grep -rlI --include='*.yaml' --include='*.yml' --include='*.json' --include='*.py' "
                   f"--include='*.cfg' --include='*.toml' --include='*.ini' '{keys}' . | xargs -r {sed}")
    higher = not bool(_LOWER_BETTER.search(metric))
    lines = [
        f"id = {_toml_str(cid)}",
        f"error_type = {_toml_str(r.error_type)}",
        f"task_type = {_toml_str(_task_type(metric))}",
        f"metric = {_toml_str(metric)}",
        f"paper_value = {float(r.symptom.paper_value)!r}",
        f"reported_value = {float(r.symptom.obtained_value)!r}",  # type: ignore[arg-type]
        f"higher_is_better = {'true' if higher else 'false'}",
        f"thread_id = {_toml_str(r.thread_id)}",
        f"description = {_toml_str(('DRAFT for review. ' + (r.root_cause or r.problem_statement))[:2000])}",
        "",
        "[source]",
        f"git = {_toml_str(f'https://github.com/{r.repo}.git')}",
        "",
        "[setup]",
        "commands = []",
        "network = false",
        "timeout_s = 1800",
        "",
        "[run]",
        f"command = {_toml_str(run_cmd)}",
        f"metric_regex = {_toml_str(_metric_regex(metric))}",
        "seeds = 1",
        "timeout_s = 3600",
        "",
        "[fix]",
        f"command = {_toml_str(fix_cmd)}",
        "",
    ]
    text = "\n".join(lines)
    import tomllib

    doc = tomllib.loads(text)
    parse_spec(doc, f"draft for {r.thread_id}")
    return Draft(cid, r.thread_id, toml=text, spec=doc)


def draft_cases(records: list[Record]) -> list[Draft]:
    """Batch form of :func:`draft_case` (pure: list in, list out)."""
    return [draft_case(r) for r in records]


def run_draft(store: Store) -> StageReport:
    """Draft cases for the workspace's kept scored records (or all records when none are scored).

    Drafts go to ``<workspace>/cases/<id>/case.toml`` with status ``draft``;
    the others are stored ``not_replayable`` with what is missing. Cases already
    reviewed (any other status) are left untouched, so reruns are idempotent.
    """
    records = list(store.iter_scored()) or list(store.iter_records())
    existing = {c["case_id"]: c for c in store.cases()}
    report = StageReport(stage="replay-draft")
    drafted = not_replayable = kept = 0
    for d in draft_cases(records):
        prev = existing.get(d.case_id)
        if prev is not None and prev["status"] not in ("draft", "not_replayable"):
            kept += 1
            continue
        if d.toml is None:
            store.put_case(d.case_id, status="not_replayable", thread_id=d.thread_id, missing=list(d.missing))
            not_replayable += 1
            continue
        path = store.root / "cases" / d.case_id / "case.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name("case.toml.tmp")
        tmp.write_text(d.toml, encoding="utf-8")
        tmp.replace(path)
        store.put_case(d.case_id, status="draft", path=str(path), thread_id=d.thread_id, spec=d.spec)
        drafted += 1
    report.counts = {"records": len(records), "drafted": drafted, "not_replayable": not_replayable,
                     "already_reviewed": kept}
    report.outputs["cases_dir"] = str(store.root / "cases")
    report.notes.append("review each draft, then mark it ready (status 'ready') to replay it")
    return report


def approve_cases(store: Store, case_ids: list[str]) -> StageReport:
    """Mark reviewed drafts ``ready`` so that ``reprodiag replay`` (without ``--case``) replays them.

    The spec file is validated first; an unknown id, a case that is not a draft or ready, or a spec that
    no longer loads is a one-line UserError and nothing is changed."""
    from sandbox.spec import load_spec

    known = {row["case_id"]: row for row in store.cases()}
    for cid in case_ids:
        row = known.get(cid)
        if row is None:
            raise UserError(f"no case {cid!r} in the workspace (see `reprodiag export cases`)")
        if row["status"] not in ("draft", "ready"):
            raise UserError(f"case {cid!r} is {row['status']} and cannot be approved")
        load_spec(row["path"])
    for cid in case_ids:
        store.set_case_status(cid, "ready")
    return StageReport(stage="replay", counts={"approved": len(case_ids), "ready": len(store.cases("ready"))},
                       notes=["run `reprodiag replay` to replay the ready cases"])
