"""The review server over HTTP: loopback only, a token on every request, hostile text escaped, refused
submissions store nothing, a decision survives a SIGKILL right after its response, reviewers kept apart."""

from __future__ import annotations

import os
import re
import select
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from reprodiag.review.decisions import combine, current_decisions
from reprodiag.review.items import load_items
from reprodiag.review.server import ReviewServer
from reprodiag.store import Store
from tests.conftest import REPO_ROOT
from tests.reprodiag.review.corpus import HOSTILE, make_review_workspace

#: Generous bound for a server to print its address (only a hang reaches it).
START_S = 120


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_review_workspace(tmp_path_factory.mktemp("review-server"))


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def _open(url: str, data: dict[str, str] | None = None, *, follow: bool = True) -> tuple[int, str, dict[str, str]]:
    """(status, body, headers) of a GET, or of a form POST when ``data`` is given."""
    body = urllib.parse.urlencode(data).encode() if data is not None else None
    opener = urllib.request.build_opener() if follow else urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(urllib.request.Request(url, data=body), timeout=60) as r:
            return r.status, r.read().decode("utf-8"), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace"), dict(e.headers)


def _base(url: str) -> tuple[str, str]:
    """(``http://127.0.0.1:PORT``, token) of a printed address."""
    u = urllib.parse.urlsplit(url)
    return f"{u.scheme}://{u.netloc}", urllib.parse.parse_qs(u.query)["t"][0]


@pytest.fixture
def server(ws: Path) -> Iterator[tuple[ReviewServer, Store]]:
    store = Store(ws)
    srv = ReviewServer(store, load_items(store), reviewer="tester")
    srv.start()
    yield srv, store
    srv.stop()
    store.close()


def _serve_cli(ws: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    """``reprodiag review serve --port 0`` in a child process, and the address it printed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPRODIAG_")}
    proc = subprocess.Popen([sys.executable, "-m", "reprodiag", "-w", str(ws), "review", "serve", "--port", "0",
                             *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=REPO_ROOT)
    ready, _, _ = select.select([proc.stdout], [], [], START_S)
    line = proc.stdout.readline() if ready else ""  # type: ignore[union-attr]
    if not line.startswith("review: http"):
        proc.kill()
        raise AssertionError(f"no address printed: {line!r} {proc.stderr.read()[-2000:]}")  # type: ignore[union-attr]
    return proc, line.split()[1]


def test_serves_on_loopback_only_and_refuses_requests_without_its_token(ws: Path) -> None:
    proc, url = _serve_cli(ws, "--reviewer", "tester")
    try:
        base, token = _base(url)
        assert base.startswith("http://127.0.0.1:") and len(token) >= 32
        port = int(base.rsplit(":", 1)[1])
        listening = [c.laddr for c in psutil.Process(proc.pid).net_connections(kind="inet")
                     if c.status == psutil.CONN_LISTEN]
        assert listening and all(a.ip == "127.0.0.1" and a.port == port for a in listening), listening
        others = [a.address for addrs in psutil.net_if_addrs().values() for a in addrs
                  if a.family == socket.AF_INET and not a.address.startswith("127.")]
        for addr in others:  # the machine's other addresses do not answer
            with pytest.raises(OSError), socket.create_connection((addr, port), timeout=5):
                pass
        for path in ("/", "/item", f"/?t={token[:-1]}", "/?t=", f"/item?T={token}"):
            status, body, _ = _open(base + path)
            assert status == 403 and "token" in body, path
        status, _, _ = _open(base + "/decide", {"id": "lab00/paper-00#1", "queue": "eval", "decision": "accept"})
        assert status == 403
        with Store(ws) as s:
            assert current_decisions(s) == []
        status, body, headers = _open(url)
        assert status == 200 and "reprodiag review" in body
        assert "script-src 'nonce-" in headers["Content-Security-Policy"] and headers["Referrer-Policy"] == "no-referrer"
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    assert proc.returncode == 0, proc.stderr.read()  # type: ignore[union-attr]


def test_a_decision_survives_sigkill_right_after_its_response(tmp_path: Path) -> None:
    ws = make_review_workspace(tmp_path)
    proc, url = _serve_cli(ws, "--reviewer", "killed")
    try:
        base, token = _base(url)
        item = "lab00/paper-00#2"
        form = {"id": item, "queue": "eval", "decision": "edit", "next": "", "error_type": "hyperparameter",
                "root_cause": "The warmup was one tenth of the paper's 4000 steps.",
                "acceptable_directions": "warmup steps\nlearning-rate schedule", "paper_value": "27.3",
                "obtained_value": "25.8", "is_resolved": "yes", "reason": "cause reworded"}
        status, _, headers = _open(f"{base}/decide?t={token}", form, follow=False)
        assert status == 303 and "/item?" in headers["Location"]
        os.kill(proc.pid, signal.SIGKILL)  # the fixed point: the decision's response has arrived
    finally:
        proc.kill()
        proc.wait(timeout=60)
    with Store(ws) as s:
        got = current_decisions(s, "killed")
    assert len(got) == 1
    d = got[0]
    assert (d.item_id, d.decision, d.reason, d.source) == (item, "edit", "cause reworded", "page")
    assert d.after["root_cause"] == form["root_cause"]
    assert d.after["acceptable_directions"] == ["warmup steps", "learning-rate schedule"]


def test_thread_text_is_escaped_and_evidence_highlighted(server: tuple[ReviewServer, Store]) -> None:
    srv, _ = server
    status, page, _ = _open(srv.url.replace("/?", "/item?id=lab00%2Fpaper-00%231&"))
    assert status == 200
    assert "<script>window.__pwned" not in page and "<b id=injected>" not in page
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in page
    assert "ghp_" not in page and "alice-asker" not in page and "maint-bob" not in page  # redacted
    assert re.search(r'<mark title="evidence: root_cause">The paper&#x27;s learning rate assumed 8 GPUs with</mark>',
                     page)
    assert 'id="post-c2"' in page and "post c2" in page
    assert HOSTILE not in page


def test_refused_submissions_store_nothing_and_keep_what_was_typed(server: tuple[ReviewServer, Store]) -> None:
    srv, store = server
    base, token = _base(srv.url)
    typed = "A cause I do not want to lose"
    status, page, _ = _open(f"{base}/decide?t={token}", {
        "id": "lab00/paper-00#1", "queue": "eval", "decision": "edit", "error_type": "data", "root_cause": typed,
        "acceptable_directions": "", "paper_value": "seventy", "obtained_value": "", "is_resolved": "yes"})
    assert status == 400 and "paper_value must be a number" in page and typed in page and "<details id=edit open>" in page
    status, page, _ = _open(f"{base}/decide?t={token}", {"id": "lab00/paper-00#1", "queue": "eval",
                                                         "decision": "reject", "reason": "  "})
    assert status == 400 and "a reject needs a reason" in page
    status, _, _ = _open(f"{base}/decide?t={token}", {"id": "elsewhere/x#1", "queue": "eval", "decision": "accept"})
    assert status == 400
    assert current_decisions(store) == []


def test_two_reviewers_are_kept_apart(tmp_path: Path) -> None:
    ws = make_review_workspace(tmp_path)
    store = Store(ws)
    items = load_items(store)
    ana, ben = ReviewServer(store, items, reviewer="ana"), ReviewServer(store, items, reviewer="ben")
    ana.start()
    ben.start()
    try:
        item = items[0].item_id
        for srv, form in ((ana, {"decision": "accept"}), (ben, {"decision": "reject", "reason": "cause not shown"})):
            base, token = _base(srv.url)
            status, page, _ = _open(f"{base}/decide?t={token}", {"id": item, "queue": "eval", **form})
            assert status == 200
        q = urllib.parse.quote(item)
        _, page_a, _ = _open(ana.url.replace("/?", f"/item?id={q}&"))
        _, page_b, _ = _open(ben.url.replace("/?", f"/item?id={q}&"))
        assert 'id=status>accepted<' in page_a and "cause not shown" not in page_a
        assert 'id=status>rejected<' in page_b and "cause not shown" in page_b
        assert "1 of" in page_a and "1 accepted" in page_a and "0 rejected" in page_a
    finally:
        ana.stop()
        ben.stop()
    cur = current_decisions(store)
    assert {(d.reviewer, d.decision) for d in cur} == {("ana", "accept"), ("ben", "reject")}
    combined, _ = combine(cur, {it.item_id: it.digest for it in items})
    assert combined[item].reviewers == ("ana", "ben") and not combined[item].kept
    store.close()


def test_hostile_record_fields_and_the_sft_sample_are_shown_as_text(tmp_path: Path) -> None:
    ws = make_review_workspace(tmp_path)
    store = Store(ws)
    rec = next(r for r in store.iter_scored() if r.thread_id == "lab00/paper-00#2")
    store.put_scored([rec.model_copy(update={"root_cause": f"The warmup was too short {HOSTILE}."})])
    srv = ReviewServer(store, load_items(store, sample_sft=2), reviewer="tester")
    srv.start()
    try:
        _, page, _ = _open(srv.url.replace("/?", "/item?id=lab00%2Fpaper-00%232&"))
        assert "<script>window.__pwned" not in page and "<b id=injected>" not in page
        assert page.count("&lt;/textarea&gt;&lt;b id=injected&gt;") >= 2  # the field and its edit box
        status, page, _ = _open(srv.url.replace("/?", "/item?queue=sft&"))
        assert status == 200 and "The SFT row's answer" in page and "SFT sample" in page
        assert "0 of 2 reviewed" in page
    finally:
        srv.stop()
        store.close()
