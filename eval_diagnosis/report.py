"""A static, self-contained HTML report (inline CSS and SVG, no script, no CDN). All model and thread
text is HTML-escaped."""

from __future__ import annotations

import re
from html import escape
from typing import Any

from eval_diagnosis.graders.base import Grade
from reprodiag.schema import ERROR_TYPES, EvalItem

_COLORS = ("#4269d0", "#efb118", "#ff725c", "#6cc5b0", "#3ca951", "#ff8ab7", "#a463f2", "#97bbf5")
_CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:70em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:right}
th{background:#f4f4f4}td.l,th.l{text-align:left}.hit{color:#1a7f37}.miss{color:#b42318}.err{color:#9a6700}
pre{white-space:pre-wrap;background:#f8f8f8;padding:.5em;border:1px solid #eee}.item{margin:1.5em 0}"""


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.1f}%"


def _ci(ci: list[float] | None) -> str:
    return "" if not ci else f" <small>[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]</small>"


def _leaderboard(models: dict[str, Any]) -> str:
    rows = []
    ranked = sorted(models.items(), key=lambda kv: -(kv[1]["overall"].get("hit_any") or 0))
    for name, res in ranked:
        o = res["overall"]
        ci = o.get("ci95") or {}
        rows.append(
            f"<tr><td class=l>{escape(name)}</td><td>{o['n']}</td><td>{o['errors']}</td>"
            f"<td>{_pct(o['hit_at_1'])}{_ci(ci.get('hit_at_1'))}</td><td>{_pct(o['hit_at_3'])}{_ci(ci.get('hit_at_3'))}"
            f"</td><td>{_pct(o['hit_any'])}{_ci(ci.get('hit_any'))}</td>"
            f"<td>{_pct(o['false_positive_rate'])}{_ci(ci.get('false_positive_rate'))}</td>"
            f"<td>{_pct(o['justified_rate'])}</td></tr>")
    return ("<table><tr><th class=l>model</th><th>items</th><th>errors</th><th>hit@1</th><th>hit@3</th>"
            "<th>hit (any)</th><th>false-positive rate</th><th>justified</th></tr>" + "".join(rows) + "</table>")


_MD_BOLD = re.compile(r"\*\*([^*\n]+)\*\*|__([^_\n]+)__")
_MD_CODE = re.compile(r"`([^`\n]+)`")


def md_inline(text: str) -> str:
    """Safe inline Markdown: the text is HTML-escaped first, then ``**bold**`` and `` `code` `` become tags
    (nothing else: no links, no raw HTML)."""
    out = escape(text or "")
    out = _MD_CODE.sub(lambda m: f"<code>{m.group(1)}</code>", out)
    return _MD_BOLD.sub(lambda m: f"<b>{m.group(1) or m.group(2)}</b>", out)


def _axis_y(parts: list[str], left: float, right: float, top: float, h: float, label: str) -> None:
    for frac in (0, 0.25, 0.5, 0.75, 1):
        y = top + h - frac * h
        parts.append(f'<line x1="{left}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
                     f'<text x="{left - 4}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{int(frac * 100)}%</text>')
    parts.append(f'<text x="12" y="{top + h / 2:.1f}" font-size="11" text-anchor="middle" '
                 f'transform="rotate(-90 12 {top + h / 2:.1f})">{escape(label)}</text>')


def _bars(models: dict[str, Any]) -> str:
    """Hit rate (any) per error type and model, with 95% interval whiskers; type names on two lines."""
    names = sorted(models)
    types = [t for t in (*ERROR_TYPES, "other") if any(t in models[m]["per_type"] for m in names)]
    if not names or not types:
        return ""
    bw = 16
    gw = max(110, 24 + (bw + 4) * len(names))
    h, top, left = 200, 20, 56
    width = left + gw * len(types) + 20
    legend_y = top + h + 50
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{legend_y + 22 * ((len(names) + 2) // 3) + 10}" '
             f'role="img"><title>hit rate (any) per error type, with 95% intervals</title>']
    _axis_y(parts, left, width - 10, top, h, "hit rate (any)")
    for ti, t in enumerate(types):
        x0 = left + ti * gw + (gw - (bw + 4) * len(names)) / 2
        for mi, m in enumerate(names):
            blk = models[m]["per_type"].get(t) or {}
            v = blk.get("hit_any") or 0
            bh = v * h
            x = x0 + mi * (bw + 4)
            parts.append(f'<rect x="{x:.1f}" y="{top + h - bh:.1f}" width="{bw}" height="{bh:.1f}" '
                         f'fill="{_COLORS[mi % len(_COLORS)]}"><title>{escape(m)} {escape(t)}: {_pct(v)} '
                         f'(n={blk.get("n", 0)})</title></rect>')
            ci = (blk.get("ci95") or {}).get("hit_any")
            if ci:
                cx, y1, y2 = x + bw / 2, top + h - ci[0] * h, top + h - ci[1] * h
                parts.append(f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{y1:.1f}" y2="{y2:.1f}" stroke="#333"/>'
                             f'<line x1="{cx - 4:.1f}" x2="{cx + 4:.1f}" y1="{y2:.1f}" y2="{y2:.1f}" stroke="#333"/>'
                             f'<line x1="{cx - 4:.1f}" x2="{cx + 4:.1f}" y1="{y1:.1f}" y2="{y1:.1f}" stroke="#333"/>')
        cx = left + ti * gw + gw / 2
        words = t.split("_")
        for li, w in enumerate(words):
            parts.append(f'<text x="{cx:.1f}" y="{top + h + 14 + 12 * li}" font-size="10" '
                         f'text-anchor="middle">{escape(w)}</text>')
    for mi, m in enumerate(names):
        lx, ly = left + (mi % 3) * 220, legend_y + 22 * (mi // 3)
        parts.append(f'<rect x="{lx}" y="{ly}" width="10" height="10" fill="{_COLORS[mi % len(_COLORS)]}"/>'
                     f'<text x="{lx + 14}" y="{ly + 9}" font-size="11">{escape(m)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _scatter(models: dict[str, Any]) -> str:
    """Hit rate against false-positive rate, both axes 0–100% with ticks."""
    size, pad = 260, 50
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{size + 2 * pad + 200}" height="{size + 2 * pad}" '
             f'role="img"><title>hit rate vs false-positive rate</title>'
             f'<rect x="{pad}" y="{pad}" width="{size}" height="{size}" fill="none" stroke="#999"/>']
    for frac in (0, 0.25, 0.5, 0.75, 1):
        x = pad + frac * size
        y = pad + size - frac * size
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{pad}" y2="{pad + size}" stroke="#eee"/>'
                     f'<line x1="{pad}" x2="{pad + size}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>'
                     f'<text x="{x:.1f}" y="{pad + size + 14}" font-size="10" text-anchor="middle">{int(frac * 100)}%</text>'
                     f'<text x="{pad - 5}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{int(frac * 100)}%</text>')
    parts.append(f'<text x="{pad + size / 2}" y="{size + pad + 34}" font-size="11" text-anchor="middle">'
                 f'false-positive rate (unmatched directions / all)</text><text x="14" y="{pad + size / 2}" '
                 f'font-size="11" transform="rotate(-90 14 {pad + size / 2})" text-anchor="middle">hit rate (any)</text>')
    for i, (m, res) in enumerate(sorted(models.items())):
        o = res["overall"]
        x = pad + (o.get("false_positive_rate") or 0) * size
        y = pad + size - (o.get("hit_any") or 0) * size
        c = _COLORS[i % len(_COLORS)]
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="{c}"><title>{escape(m)}</title></circle>'
                     f'<text x="{x + 7:.1f}" y="{y + 4:.1f}" font-size="10">{escape(m)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _field(label: str, value: str, markdown: bool = False) -> str:
    if not (value or "").strip():
        return ""
    return f"<b>{label}:</b> {md_inline(value) if markdown else escape(value)}<br>"


def _examples(items: list[EvalItem], grades: list[Grade], answers: dict[tuple[str, str], str], k: int = 5) -> str:
    by_item: dict[str, list[Grade]] = {}
    for g in grades:
        by_item.setdefault(g.id, []).append(g)
    seen_types: set[str] = set()
    chosen: list[EvalItem] = []
    for it in items:
        if it.id in by_item and it.error_type not in seen_types:
            chosen.append(it)
            seen_types.add(it.error_type)
        if len(chosen) >= k:
            break
    out = []
    for it in chosen:
        rows = []
        for g in sorted(by_item[it.id], key=lambda g: g.model):
            cls = "err" if g.error else "hit" if g.hit else "miss"
            rows.append(f"<h4>{escape(g.model)} — <span class={cls}>{escape(g.reason)}</span></h4>"
                        f"<pre>{escape(answers.get((it.id, g.model), ''))}</pre>")
        out.append(f"<div class=item><h3>{escape(it.id)} ({escape(it.error_type)})</h3><p>"
                   + _field("Symptom", it.symptom) + _field("Environment", it.environment) + _field("Tried", it.tried)
                   + _field("Gold root cause", it.gold_root_cause, markdown=True) + "</p>" + "".join(rows) + "</div>")
    return "".join(out)


def _agreement(card: dict[str, Any], uncertain: int) -> str:
    """How far to trust the hit rates: the grader's measured agreement with the labeled answers (and who made
    those labels), its controls, and for an offline grader that its figures are an estimate."""
    if not card:
        return ""

    def rng(v: list[Any] | None) -> str:
        return f" [{v[0]:.2f}, {v[1]:.2f}]" if v and v[0] is not None else ""

    if not card.get("measured"):
        jp = card.get("judge_prompt") or {}
        prompt = ""
        if jp:
            ci = jp.get("ci95") or {}
            prompt = (f" The judge prompt ({escape(str(jp.get('prompt_version')))}) agreed with the frozen labels "
                      f"on {jp.get('n')} answers at accuracy {jp.get('accuracy', 0):.2f}{rng(ci.get('accuracy'))}, "
                      f"kappa {jp.get('kappa', 0):.2f}{rng(ci.get('kappa'))} when "
                      f"{escape(str(jp.get('recorded_by')))} answered it (labels: "
                      f"{escape(str(jp.get('labeled_by')))}); a cheaper judge model may agree less.")
        return (f"<p class=agree>Grader agreement with the labels: not measured for "
                f"<code>{escape(str(card.get('grader', '')))}</code>; measure it with "
                f"<code>{escape(str(card.get('how', '')))}</code>.{prompt}</p>")
    ci = card.get("ci95") or {}
    ctrl = card.get("controls") or {}
    other = ctrl.get("other_type") or {}
    control = (f" Answers written for another item of another type were graded hits {100 * other['hit_rate']:.1f}% "
               f"of the time{rng([100 * x for x in other['ci95']] if other.get('ci95') else None).replace('.00', '')}."
               if other else "")
    estimate = (" These hit rates are an <b>estimate</b> of the offline grader; grade with "
                "<code>--grader lexical+llm:PROVIDER:MODEL</code> to have a judge decide its uncertain grades."
                if card.get("estimate") else "")
    return (f"<p class=agree>Grader agreement with the labels ({card.get('n')} labeled answers, "
            f"<code>{escape(str(card.get('labels', '')))}</code>; labels: {escape(str(card.get('labeled_by', 'not recorded')))}): "
            f"accuracy {card.get('accuracy', 0):.2f}{rng(ci.get('accuracy'))}, "
            f"Cohen's kappa {card.get('kappa', 0):.2f}{rng(ci.get('kappa'))}.{control} {int(uncertain)} grade(s) here "
            f"were uncertain (near the grader's threshold).{estimate}</p>")


def render_html(results: dict[str, Any], items: list[EvalItem], grades: list[Grade],
                answers: dict[tuple[str, str], str]) -> str:
    models = results.get("models") or {}
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>reprodiag diagnosis benchmark</title>"
        f"<style>{_CSS}</style></head><body><h1>Diagnosis benchmark</h1>"
        f"<p>{results.get('n_items', 0)} items, grader <code>{escape(str(results.get('grader', '')))}</code>; "
        "95% bootstrap confidence intervals in brackets (seeded).</p>"
        f"{_agreement(results.get('grader_agreement') or {}, results.get('uncertain', 0))}"
        f"<h2>Leaderboard</h2>{_leaderboard(models)}"
        f"<h2>Hit rate per error type</h2>{_bars(models)}"
        f"<h2>Hit rate vs false positives</h2>{_scatter(models)}"
        f"<h2>Examples</h2>{_examples(items, grades, answers)}</body></html>"
    )
