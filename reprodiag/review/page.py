"""The review page: plain HTML (every form works without script) and a little vanilla JavaScript for the
keyboard. Every thread and model text is HTML-escaped here (it is hostile input); the page loads nothing
from elsewhere, and the server's Content-Security-Policy lets only this page's own inline style and script
(by nonce) run.

Keys: ``a`` accept, ``e`` edit (then Ctrl+Enter saves, Escape closes), ``r`` reject (type the reason, Enter),
``j`` / ``k`` next / previous item, ``/`` the filters (arrow keys change one and apply it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any
from urllib.parse import urlencode

from reprodiag.review.decisions import Decision
from reprodiag.review.fields import TYPES, Fields
from reprodiag.review.items import ReviewItem, Segment, ThreadView

#: status filter values → labels (``""``: every item)
STATUSES: dict[str, str] = {"": "any status", "unreviewed": "not reviewed", "accept": "accepted", "edit": "edited",
                            "reject": "rejected"}
DONE = {"accept": "accepted", "edit": "edited", "reject": "rejected"}

CSS = """
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#1f2328;
background:#f6f8fa}
header{display:flex;flex-wrap:wrap;align-items:center;gap:6px 24px;padding:10px 20px;background:#fff;
border-bottom:1px solid #d0d7de}
h1{font-size:18px;margin:0}
h2{font-size:16px;margin:0 0 8px}
h3{font-size:13px;font-weight:600;color:#57606a;margin:0 0 4px}
p{margin:0}
.who,.hint,.meta{font-size:13px;color:#57606a}
.progress{display:flex;align-items:center;gap:10px;font-size:14px}
progress{width:160px;height:12px}
form.filters{display:flex;flex-wrap:wrap;align-items:center;gap:8px 14px;margin:0}
label{font-size:14px}
select,input,textarea,button{font:inherit;font-size:14px}
nav.pager{display:flex;align-items:center;justify-content:space-between;gap:16px;padding:8px 20px;font-size:14px}
nav.pager a{color:#0969da}
main{display:grid;grid-template-columns:minmax(0,3fr) minmax(0,2fr);gap:16px;padding:0 20px 16px;align-items:start}
section.panel{background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:12px 16px;min-width:0}
.post{border-top:1px solid #eaeef2;padding:8px 0}
.post.reply{margin-left:24px}
.text{white-space:pre-wrap;overflow-wrap:anywhere;margin:0;font-size:14px}
mark{background:#fff1a8;border-bottom:2px solid #d4a72c;padding:0 1px}
dl{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:6px 12px;margin:0 0 12px}
dt{font-weight:600;font-size:14px}
dd{margin:0;overflow-wrap:anywhere;font-size:14px}
ul{margin:0;padding-left:18px}
.badge{display:inline-block;font-size:13px;border-radius:10px;padding:0 8px;margin-left:6px;background:#eaeef2}
.st-accept{background:#dafbe1}.st-edit{background:#ddf4ff}.st-reject{background:#ffebe9}
.actions{display:flex;flex-wrap:wrap;gap:10px;align-items:flex-start;margin:8px 0}
.actions form{margin:0}
details{border:1px solid #d0d7de;border-radius:6px;padding:6px 10px;margin:8px 0}
summary{cursor:pointer;font-size:14px}
.grid{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:8px 10px;align-items:start;margin-top:8px}
.grid textarea,.grid input,.grid select{width:100%}
textarea{min-height:64px}
button{padding:4px 12px;border:1px solid #8c959f;border-radius:6px;background:#f6f8fa;cursor:pointer}
button.primary{background:#1f883d;color:#fff;border-color:#1a7f37}
.error{background:#ffebe9;border:1px solid #ff8182;border-radius:6px;padding:6px 10px;margin:8px 0;font-size:14px}
.note{font-size:13px;color:#57606a;margin:6px 0}
pre.answer{white-space:pre-wrap;overflow-wrap:anywhere;font-size:13px;background:#f6f8fa;padding:8px;margin:0}
footer{padding:8px 20px 16px;font-size:13px;color:#57606a}
kbd{font:12px ui-monospace,monospace;color:#1f2328;border:1px solid #d0d7de;border-radius:4px;padding:0 4px;background:#fff}
"""

JS = """
(function () {
  var $ = function (id) { return document.getElementById(id); };
  function typing(t) {
    return t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT' || t.isContentEditable);
  }
  function go(id) { var a = $(id); if (a) { window.location.href = a.href; } }
  document.addEventListener('keydown', function (e) {
    if (e.key === 'Escape') {
      document.querySelectorAll('details').forEach(function (d) { d.open = false; });
      if (document.activeElement) { document.activeElement.blur(); }
      return;
    }
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey) && $('edit') && $('edit').open) {
      e.preventDefault(); $('edit-form').requestSubmit(); return;
    }
    if (typing(e.target) || e.ctrlKey || e.metaKey || e.altKey) { return; }
    if (e.key === 'a' && $('accept-form')) { e.preventDefault(); $('accept-form').requestSubmit(); }
    else if (e.key === 'e' && $('edit')) { e.preventDefault(); $('edit').open = true; $('f-root_cause').focus(); }
    else if (e.key === 'r' && $('reject')) { e.preventDefault(); $('reject').open = true; $('f-reason').focus(); }
    else if (e.key === 'j') { e.preventDefault(); go('next'); }
    else if (e.key === 'k') { e.preventDefault(); go('prev'); }
    else if (e.key === '/') { e.preventDefault(); $('filter-type').focus(); }
  });
  document.querySelectorAll('form.filters select').forEach(function (s) {
    s.addEventListener('change', function () { s.form.requestSubmit(); });
  });
})();
"""


def _e(v: Any) -> str:
    return escape("" if v is None else str(v), quote=True)


def link(path: str, **params: str) -> str:
    """A same-origin URL with its query (empty parameters left out), not yet escaped for HTML."""
    q = {k: v for k, v in params.items() if v}
    return path + ("?" + urlencode(q) if q else "")


@dataclass(frozen=True)
class Filters:
    """The list the reviewer walks: a queue, and optionally one error type and one status."""

    queue: str = "eval"
    type: str = ""
    status: str = ""

    def params(self, token: str) -> dict[str, str]:
        return {"t": token, "queue": self.queue, "type": self.type, "status": self.status}


@dataclass
class ItemPage:
    """Everything one item's page shows."""

    token: str
    nonce: str
    reviewer: str
    filters: Filters
    queues: Sequence[str]
    item: ReviewItem
    thread: ThreadView | None
    #: position in the filtered list (0-based; -1 when the item is not in it) and the list's length
    position: int
    filtered: int
    prev_id: str | None
    next_id: str | None
    decision: Decision | None
    #: this reviewer's decisions in the current queue by kind, and the queue's size
    progress: Counter[str] = field(default_factory=Counter)
    total: int = 0
    error: str | None = None
    #: submitted values to show again after a refused submission (field → text), and the panel to open
    draft: dict[str, str] | None = None
    open_panel: str | None = None


def _segments(segs: tuple[Segment, ...]) -> str:
    return "".join(f'<mark title="evidence: {_e(label)}">{_e(text)}</mark>' if label else _e(text)
                   for text, label in segs)


def _thread(view: ThreadView | None, item: ReviewItem) -> str:
    if view is None:
        return (f"<h2>{_e(item.title)}</h2><p class=note>The workspace does not hold this thread "
                f"({_e(item.item_id)}); only the record is shown.</p>")
    head = (f"<h2>{_segments(view.title)}</h2><p class=meta>{_e(view.thread_id)} · {_e(view.kind)} · "
            f"{_e(view.state)} · opened {_e(view.created[:10])}")
    if view.url.startswith("https://"):
        head += f' · <a href="{_e(view.url)}" rel="noopener noreferrer" target="_blank">on GitHub</a>'
    head += "</p>"
    posts = []
    for p in view.posts:
        label = "opening post" if p.post_id == "opening" else f"post {p.post_id}"
        cls = "post reply" if p.depth else "post"
        posts.append(f'<article class="{cls}" id="post-{_e(p.post_id)}"><h3>{_e(label)} · {_e(p.author)} '
                     f'({_e(p.role)}) · {_e(p.created[:10])}</h3><p class=text>{_segments(p.segments)}</p></article>')
    missing = ""
    if view.unplaced:
        missing = ("<h3>Evidence quotes not found in the thread</h3><ul>" + "".join(
            f"<li>{_e(ev.field)}: “{_e(ev.quote)}”</li>" for ev in view.unplaced) + "</ul>")
    return head + "".join(posts) + missing


def _value(v: float | None) -> str:
    return "unknown" if v is None else f"{v:g}"


def _fields_list(f: Fields, metric: str | None) -> str:
    dirs = "".join(f"<li>{_e(d)}</li>" for d in f["acceptable_directions"]) or "<li>(none)</li>"
    return (f"<dl><dt>error type</dt><dd id=v-error_type>{_e(f['error_type'])}</dd>"
            f"<dt>root cause</dt><dd id=v-root_cause>{_e(f['root_cause']) or '(none)'}</dd>"
            f"<dt>acceptable directions</dt><dd><ul id=v-directions>{dirs}</ul></dd>"
            f"<dt>values</dt><dd>{_e(metric or 'metric')}: paper {_e(_value(f['paper_value']))}, "
            f"obtained {_e(_value(f['obtained_value']))}</dd>"
            f"<dt>resolved</dt><dd>{'yes' if f['is_resolved'] else 'no'}</dd></dl>")


def _hidden(p: ItemPage, decision: str) -> str:
    f = p.filters
    vals = {"id": p.item.item_id, "queue": p.item.queue, "next": p.next_id or "", "decision": decision,
            "type": f.type, "status": f.status}
    return "".join(f'<input type=hidden name="{k}" value="{_e(v)}">' for k, v in vals.items())


def _edit_form(p: ItemPage, action: str) -> str:
    shown = p.decision.after if p.decision is not None and p.decision.after is not None else p.item.before
    d = p.draft or {}

    def val(name: str, default: str) -> str:
        return d.get(name, default)

    types = "".join(f'<option value="{_e(t)}"{" selected" if t == val("error_type", shown["error_type"]) else ""}>'
                    f"{_e(t)}</option>" for t in TYPES)
    resolved = val("is_resolved", "yes" if shown["is_resolved"] else "no")
    res = "".join(f'<option value="{v}"{" selected" if v == resolved else ""}>{v}</option>' for v in ("yes", "no"))
    num = {k: "" if shown[k] is None else f"{shown[k]:g}" for k in ("paper_value", "obtained_value")}
    opened = " open" if p.open_panel == "edit" else ""
    return (f'<details id=edit{opened}><summary>Edit the fields <kbd>e</kbd></summary>'
            f'<form id=edit-form method=post action="{_e(action)}">{_hidden(p, "edit")}<div class=grid>'
            f'<label for=f-error_type>error type</label><select id=f-error_type name=error_type>{types}</select>'
            f'<label for=f-root_cause>root cause</label><textarea id=f-root_cause name=root_cause rows=3>'
            f'{_e(val("root_cause", shown["root_cause"]))}</textarea>'
            f'<label for=f-directions>acceptable directions<br><span class=hint>one per line</span></label>'
            f'<textarea id=f-directions name=acceptable_directions rows=3>'
            f'{_e(val("acceptable_directions", chr(10).join(shown["acceptable_directions"])))}</textarea>'
            f'<label for=f-paper_value>paper value</label><input id=f-paper_value name=paper_value '
            f'inputmode=decimal value="{_e(val("paper_value", num["paper_value"]))}">'
            f'<label for=f-obtained_value>obtained value</label><input id=f-obtained_value name=obtained_value '
            f'inputmode=decimal value="{_e(val("obtained_value", num["obtained_value"]))}">'
            f'<label for=f-is_resolved>resolved</label><select id=f-is_resolved name=is_resolved>{res}</select>'
            f'<label for=f-note>note</label><input id=f-note name=reason value="{_e(val("reason", ""))}" '
            f'placeholder="optional">'
            f'</div><p class=actions><button class=primary type=submit>Save the edit <kbd>Ctrl</kbd>+<kbd>Enter</kbd>'
            f'</button></p></form></details>')


def _decide(p: ItemPage) -> str:
    action = link("/decide", t=p.token)
    opened = " open" if p.open_panel == "reject" else ""
    reason = (p.draft or {}).get("reason", "") if p.open_panel == "reject" else ""
    return (f'<div class=actions><form id=accept-form method=post action="{_e(action)}">{_hidden(p, "accept")}'
            f'<button class=primary type=submit>Accept <kbd>a</kbd></button></form></div>'
            + _edit_form(p, action)
            + f'<details id=reject{opened}><summary>Reject, with a reason <kbd>r</kbd></summary>'
              f'<form id=reject-form method=post action="{_e(action)}">{_hidden(p, "reject")}<div class=grid>'
              f'<label for=f-reason>reason</label><input id=f-reason name=reason required value="{_e(reason)}" '
              f'placeholder="e.g. the thread never establishes the cause"></div>'
              f'<p class=actions><button type=submit>Reject <kbd>Enter</kbd></button></p></form></details>')


def _header(p: ItemPage) -> str:
    f = p.filters
    done = sum(p.progress.values())
    counts = " · ".join(f"{p.progress.get(k, 0)} {v}" for k, v in DONE.items())
    types = "".join(f'<option value="{_e(t)}"{" selected" if t == f.type else ""}>{_e(t or "any type")}</option>'
                    for t in ("", *TYPES))
    statuses = "".join(f'<option value="{_e(k)}"{" selected" if k == f.status else ""}>{_e(v)}</option>'
                       for k, v in STATUSES.items())
    queues = "".join(f'<option value="{_e(q)}"{" selected" if q == f.queue else ""}>'
                     f'{"eval items" if q == "eval" else "SFT sample"}</option>' for q in p.queues)
    return (f'<header><h1>reprodiag review</h1><p class=who>reviewer <b>{_e(p.reviewer)}</b></p>'
            f'<p class=progress id=progress><span>{done} of {p.total} reviewed ({_e(counts)})</span>'
            f'<progress value="{done}" max="{max(p.total, 1)}"></progress></p>'
            f'<form class=filters method=get action="/item"><input type=hidden name=t value="{_e(p.token)}">'
            f'<label>queue <select name=queue>{queues}</select></label>'
            f'<label>type <select id=filter-type name=type>{types}</select></label>'
            f'<label>status <select name=status>{statuses}</select></label>'
            f'<button type=submit>Filter <kbd>/</kbd></button></form></header>')


def _pager(p: ItemPage) -> str:
    f = p.filters
    prev = (f'<a id=prev href="{_e(link("/item", id=p.prev_id, **f.params(p.token)))}">← previous <kbd>k</kbd></a>'
            if p.prev_id else "<span>← previous</span>")
    nxt = (f'<a id=next href="{_e(link("/item", id=p.next_id, **f.params(p.token)))}">next <kbd>j</kbd> →</a>'
           if p.next_id else "<span>next →</span>")
    where = (f"item {p.position + 1} of {p.filtered} in this list" if p.position >= 0 else
             f"this item is not in the filtered list ({p.filtered} items)")
    return f"<nav class=pager>{prev}<span id=where>{_e(where)}</span>{nxt}</nav>"


def _record(p: ItemPage) -> str:
    it = p.item
    d = p.decision
    badge = (f'<span class="badge st-{_e(d.decision)}" id=status>{_e(DONE[d.decision])}</span>' if d is not None
             else '<span class=badge id=status>not reviewed</span>')
    parts = [f"<h2>Record {badge}</h2>",
             f"<p class=meta>{_e(it.item_id)} · eval id {_e(it.eval_id)} · read by the {_e(it.reader)} reader "
             f"({_e(it.model)})</p>"]
    if it.note:
        parts.append(f"<p class=note>{_e(it.note)}</p>")
    if p.error:
        parts.append(f"<p class=error role=alert>{_e(p.error)}</p>")
    parts.append(_fields_list(it.before, it.metric))
    if d is not None:
        if d.decision == "edit" and d.after is not None:
            parts.append("<h3>Your edited fields</h3>" + _fields_list(d.after, it.metric))
        if d.reason:
            parts.append(f"<p class=note>Your {'reason' if d.decision == 'reject' else 'note'}: {_e(d.reason)}</p>")
    parts.append(_decide(p))
    if it.sft_answer:
        parts.append(f"<h3>The SFT row's answer</h3><pre class=answer>{_e(it.sft_answer)}</pre>")
    return "".join(parts)


def _doc(title: str, body: str, nonce: str) -> str:
    return ("<!doctype html><html lang=en><head><meta charset=utf-8>"
            '<meta name=viewport content="width=device-width,initial-scale=1">'
            f"<title>{_e(title)}</title><style nonce=\"{_e(nonce)}\">{CSS}</style></head><body>{body}"
            f"<script nonce=\"{_e(nonce)}\">{JS}</script></body></html>")


def render_item(p: ItemPage) -> str:
    """One item's page."""
    keys = ("<footer>Keys: <kbd>a</kbd> accept · <kbd>e</kbd> edit (<kbd>Ctrl</kbd>+<kbd>Enter</kbd> saves) · "
            "<kbd>r</kbd> reject · <kbd>j</kbd> next · <kbd>k</kbd> previous · <kbd>/</kbd> filters · "
            "<kbd>Esc</kbd> close. Your decisions are saved in the workspace as you make them; other reviewers' "
            "decisions are kept apart and not shown.</footer>")
    body = (_header(p) + _pager(p) + f'<main><section class=panel id=thread aria-label="thread">'
            f"{_thread(p.thread, p.item)}</section><section class=panel id=record aria-label=\"record\">"
            f"{_record(p)}</section></main>" + keys)
    return _doc(f"review · {p.item.item_id}", body, p.nonce)


def render_message(title: str, text: str, nonce: str, *, back: str | None = None) -> str:
    """A page with one message (nothing to review, a refused request), with an optional link back."""
    link_ = f' <a href="{_e(back)}">Back</a>' if back else ""
    return _doc(title, f"<header><h1>reprodiag review</h1></header><main><section class=panel><h2>{_e(title)}</h2>"
                       f"<p>{_e(text)}{link_}</p></section></main>", nonce)
