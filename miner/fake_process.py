"""The fake GitHub in a child process (``python -m miner.fake_github``), for benchmarks.

In a thread of the client's process the fake's graphql-core work would share the GIL
with the client and distort wall-time figures; in its own process it behaves like a
remote server. Tokens are handed over in a private temporary file, never on the
command line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reprodiag.schema import Thread

_REPO_ROOT = Path(__file__).resolve().parent.parent


class FakeGitHubProcess:
    """``with FakeGitHubProcess(threads, meta, tokens=[...], latency_ms=100) as srv: srv.url, srv.stats()``."""

    def __init__(self, threads: Sequence[Thread], repos_meta: dict[str, dict[str, Any]] | None = None, *,
                 tokens: Sequence[str] | None = None, latency_ms: float = 0.0, start_timeout_s: float = 60.0,
                 workers: int = 0) -> None:
        self.threads = threads
        self.repos_meta = repos_meta
        self.tokens = tokens
        self.latency_ms = latency_ms
        self.workers = workers
        self.start_timeout_s = start_timeout_s
        self.url = ""
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._proc: subprocess.Popen[str] | None = None
        self._err: Any = None

    def __enter__(self) -> FakeGitHubProcess:
        self._dir = tempfile.TemporaryDirectory(prefix="fake-github-")
        d = Path(self._dir.name)
        (d / "corpus.jsonl").write_text("".join(t.model_dump_json() + "\n" for t in self.threads), encoding="utf-8")
        cmd = [sys.executable, "-m", "miner.fake_github", "--corpus", str(d / "corpus.jsonl"),
               "--latency-ms", str(self.latency_ms), "--port", "0", "--workers", str(self.workers)]
        if self.repos_meta is not None:
            (d / "meta.json").write_text(json.dumps(self.repos_meta), encoding="utf-8")
            cmd += ["--meta", str(d / "meta.json")]
        if self.tokens is not None:
            tf = d / "tokens"
            tf.touch(mode=0o600)
            tf.write_text("".join(t + "\n" for t in self.tokens), encoding="utf-8")
            cmd += ["--tokens-file", str(tf)]
        self._err = (d / "stderr.txt").open("w", encoding="utf-8")
        self._proc = subprocess.Popen(cmd, cwd=_REPO_ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=self._err, text=True)
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline().strip()
        if not line.startswith("http://"):
            self._proc.wait(timeout=self.start_timeout_s)
            err = (d / "stderr.txt").read_text(encoding="utf-8", errors="replace")
            self.__exit__()
            raise RuntimeError(f"fake GitHub did not start: {' '.join(err.split())[-300:]}")
        self.url = line
        return self

    def stats(self) -> dict[str, Any]:
        """The server's ``/__stats`` document (requests and points per token, totals, faults)."""
        with urllib.request.urlopen(self.url + "/__stats", timeout=30) as resp:
            return json.loads(resp.read())

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            if self._proc.stdout is not None:
                self._proc.stdout.close()
            self._err.close()
            self._proc = None
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None
