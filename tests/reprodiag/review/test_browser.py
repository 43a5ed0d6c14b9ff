"""The review page in a real browser (the system's headless Chromium, driven by Playwright; nothing is
downloaded): a reviewer accepts, edits and rejects with the keyboard alone, reloads, and the workspace and
the next build show exactly that; and the page is readable at 1280x800 (no text over other text, no text
below 12px, nothing wider than the window), hostile thread text shown and never run.

Skipped, with the reason, where Playwright is not installed or Chromium cannot start (`make test` installs
the Debian package when root)."""

from __future__ import annotations

import shutil
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from reprodiag.build import run_build
from reprodiag.review.decisions import current_decisions
from reprodiag.review.items import load_items
from reprodiag.review.server import ReviewServer
from reprodiag.store import Store
from tests.reprodiag.review.corpus import make_review_workspace

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"
#: Generous bound for a page to load or navigate (only a hang reaches it), milliseconds.
WAIT_MS = 60_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install "
                                   "'reprodiag[dev]')")
    with sync_api.sync_playwright() as p:
        try:
            b = p.chromium.launch(executable_path=CHROMIUM, headless=True)
        except Exception as exc:  # noqa: BLE001 - any launch failure means no browser here
            pytest.skip(f"chromium cannot start here ({CHROMIUM}): {' '.join(str(exc).split())[:200]}")
        yield b
        b.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[ReviewServer, Store, Path]]:
    ws = make_review_workspace(tmp_path)
    store = Store(ws)
    srv = ReviewServer(store, load_items(store), reviewer="ana")
    srv.start()
    yield srv, store, ws
    srv.stop()
    store.close()


def _item_url(item_id: str) -> Any:
    """A predicate for ``page.wait_for_url``: the page of ``item_id``."""
    def at(url: str) -> bool:
        u = urllib.parse.urlsplit(url)
        return u.path == "/item" and urllib.parse.parse_qs(u.query).get("id") == [item_id]
    return at


def test_accept_edit_reject_with_the_keyboard_then_reload_and_build(browser: Any, served: Any,
                                                                    tmp_path: Path) -> None:
    srv, store, _ws = served
    ids = [it.item_id for it in srv.items if it.queue == "eval"][:4]
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.set_default_timeout(WAIT_MS)
    page.goto(srv.url)
    page.wait_for_url(_item_url(ids[0]))

    page.keyboard.press("a")  # accept the first item
    page.wait_for_url(_item_url(ids[1]))

    page.keyboard.press("e")  # edit the second: the root cause and the paper's value
    assert page.evaluate("document.activeElement.id") == "f-root_cause"
    new_cause = "Warmup lasted 400 steps where the paper's schedule warms up for 4000."
    page.keyboard.press("Control+a")
    page.keyboard.type(new_cause)
    page.keyboard.press("Tab")  # to the directions, kept as they are
    page.keyboard.press("Tab")  # to the paper value
    page.keyboard.press("Control+a")
    page.keyboard.type("27.4")
    page.keyboard.press("Control+Enter")
    page.wait_for_url(_item_url(ids[2]))

    page.keyboard.press("r")  # reject the third, with a reason
    page.keyboard.type("The thread never confirms this cause.")
    page.keyboard.press("Enter")
    page.wait_for_url(_item_url(ids[3]))

    page.reload()
    assert page.locator("#status").inner_text() == "not reviewed"
    assert "3 of" in page.locator("#progress").inner_text()
    for want in ("rejected", "edited", "accepted"):  # walk back with k
        page.keyboard.press("k")
        page.wait_for_load_state()
        assert page.locator("#status").inner_text() == want
    page.close()

    rows = store.query("SELECT item_id, reviewer, decision, reason, before, after FROM reviews ORDER BY id")
    assert [(r[0], r[1], r[2]) for r in rows] == [(ids[0], "ana", "accept"), (ids[1], "ana", "edit"),
                                                  (ids[2], "ana", "reject")]
    cur = {d.item_id: d for d in current_decisions(store)}
    assert cur[ids[1]].after["root_cause"] == new_cause and cur[ids[1]].after["paper_value"] == 27.4
    assert cur[ids[1]].before["paper_value"] == 27.3
    assert cur[ids[2]].reason == "The thread never confirms this cause." and cur[ids[2]].after is None
    assert cur[ids[0]].after == cur[ids[0]].before

    out = tmp_path / "reviewed-only"
    rep = run_build(store, out, per_type_min=1, per_type_max=40, seed=0, push_to_hub=None, reviewed_only=True)
    items = {r["source_thread"]: r for r in pl.read_parquet(out / "eval" / "test.parquet").to_dicts()}
    assert set(items) == {ids[0], ids[1]}
    assert items[ids[1]]["gold_root_cause"] == new_cause
    assert rep.counts["eval reviewed"] == 2
    card = (out / "README.md").read_text()
    assert "Every eval item (2) was checked by a person" in card and "build --reviewed-only" in card

    out = tmp_path / "all"
    rep = run_build(store, out, per_type_min=1, per_type_max=40, seed=0, push_to_hub=None)
    got = {r["source_thread"] for r in pl.read_parquet(out / "eval" / "test.parquet").to_dicts()}
    assert ids[2] not in got and rep.counts["left out (eval: rejected by a reviewer)"] == 1


#: Every visible text run's boxes, font size and the page's width (the readability check).
LAYOUT_JS = """() => {
  const runs = [], small = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  let node, id = 0;
  while ((node = walker.nextNode())) {
    const text = node.textContent.trim();
    const el = node.parentElement;
    if (!text || !el || el.closest('script,style,textarea,select,option')) continue;
    if (!el.checkVisibility({visibilityProperty: true, opacityProperty: true})) continue;  // e.g. a closed <details>
    const range = document.createRange();
    range.selectNodeContents(node);
    const boxes = [...range.getClientRects()].filter(b => b.width > 0.5 && b.height > 0.5);
    if (!boxes.length) continue;
    id += 1;
    const size = parseFloat(getComputedStyle(el).fontSize);
    if (size < 12) small.push(text.slice(0, 40) + ' (' + size + 'px)');
    for (const b of boxes) runs.push({id, text: text.slice(0, 40), l: b.left, t: b.top, r: b.right, b: b.bottom});
  }
  for (const el of document.querySelectorAll('input,select,textarea,button')) {
    const size = parseFloat(getComputedStyle(el).fontSize);
    if (el.checkVisibility({visibilityProperty: true}) && size < 12) small.push(el.tagName + ' (' + size + 'px)');
  }
  const overlaps = [];
  for (let i = 0; i < runs.length; i++) {
    for (let j = i + 1; j < runs.length; j++) {
      const a = runs[i], c = runs[j];
      if (a.id === c.id) continue;
      const w = Math.min(a.r, c.r) - Math.max(a.l, c.l), h = Math.min(a.b, c.b) - Math.max(a.t, c.t);
      if (w > 1 && h > 1) overlaps.push(a.text + ' | ' + c.text);
    }
  }
  const cut = runs.filter(r => r.r > window.innerWidth + 1 || r.l < -1).map(r => r.text);
  const box = id => document.getElementById(id).getBoundingClientRect();
  return {runs: runs.length, overlaps, small, cut, scrollWidth: document.documentElement.scrollWidth,
          thread: box('thread').toJSON(), record: box('record').toJSON()};
}"""


def test_the_page_is_readable_at_1280x800(browser: Any, served: Any, tmp_path: Path) -> None:
    srv, _store, _ws = served
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.set_default_timeout(WAIT_MS)
    page.goto(srv.url)
    page.wait_for_load_state()
    for state in ("item", "edit"):
        if state == "edit":
            page.keyboard.press("e")
        shot = tmp_path / f"review-{state}-1280x800.png"
        page.screenshot(path=str(shot))
        assert shot.stat().st_size > 10_000
        got = page.evaluate(LAYOUT_JS)
        assert got["runs"] > 30
        assert got["overlaps"] == [], got["overlaps"][:5]
        assert got["small"] == [], got["small"][:5]
        assert got["cut"] == [] and got["scrollWidth"] <= 1280
        # the thread and the record side by side, both starting in the first screen
        t, r = got["thread"], got["record"]
        assert t["right"] <= r["left"] and t["top"] < 200 and r["top"] < 200 and min(t["width"], r["width"]) > 400
    # hostile thread text is shown as text and never run
    assert page.evaluate("window.__pwned") is None and page.locator("#injected").count() == 0
    assert "<script>window.__pwned = 1</script>" in page.locator("#post-opening").inner_text()
    page.close()
