"""Near-duplicate detection: vectorized MinHash (polars + numpy) with LSH banding.

Documents are lower-cased, split into ``\\w+`` words and shingled into word
3-grams (documents of 1–2 words use their words). Each shingle hash goes
through ``num_perm`` multiply-shift hash functions; a document's signature is
the per-function minimum. LSH: bands of :data:`ROWS_PER_BAND` rows; documents
sharing a band bucket are compared with the bucket's first (best-priority)
member, and linked when the share of equal signature entries (an estimate of
the Jaccard similarity) is at least ``threshold``. Linked documents form
clusters (union-find); each cluster keeps its best-priority member (the lowest
index: callers order documents best first) and the others point to it.

Documents with fewer than :data:`MIN_TOKENS` words are never duplicates (too
little signal). Deterministic for a given seed and polars version.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

ROWS_PER_BAND = 4
SHINGLE = 3
MIN_TOKENS = 5
TOKEN_PATTERN = r"\w+"
_CHUNK = 1 << 12  # shingles per block: small blocks stay in cache (about 4x faster)
_MASK32 = np.uint64(0xFFFFFFFF)


@dataclass(frozen=True)
class DedupResult:
    """``duplicate_of[i]``: index of the kept member of i's cluster, or -1 (kept / unique)."""

    duplicate_of: np.ndarray
    clusters: int

    @property
    def removed(self) -> int:
        return int((self.duplicate_of >= 0).sum())


def _perm_params(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.integers(1, 2**63 - 1, size=num_perm, dtype=np.uint64) | np.uint64(1)
    b = rng.integers(0, 2**63 - 1, size=num_perm, dtype=np.uint64)
    return a, b


def shingle_hashes(texts: pl.Series, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(doc index per shingle, shingle hash u64, token count per doc), shingles grouped by doc in order."""
    n = len(texts)
    toks = (
        pl.DataFrame({"t": texts.cast(pl.String).fill_null("")})
        .with_row_index("doc")
        .select("doc", pl.col("t").str.to_lowercase().str.extract_all(TOKEN_PATTERN).alias("tok"))
        .explode("tok")
        .drop_nulls("tok")
        .select("doc", pl.col("tok").hash(seed=seed).alias("h"))
    )
    doc = toks["doc"].to_numpy().astype(np.int64, copy=False)
    h = toks["h"].to_numpy()
    counts = np.bincount(doc, minlength=n) if len(doc) else np.zeros(n, dtype=np.int64)
    with np.errstate(over="ignore"):
        m = len(h)
        if m >= SHINGLE:
            p1, p2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F)
            sh = h[: m - 2] * p1 + h[1 : m - 1] * p2 + h[2:]
            ok = doc[: m - 2] == doc[2:]
            sh_doc, sh_h = doc[: m - 2][ok], sh[ok]
        else:
            sh_doc, sh_h = np.zeros(0, np.int64), np.zeros(0, np.uint64)
        short = counts[doc] < SHINGLE
        if short.any():  # 1–2 word documents: their words are their shingles
            sh_doc = np.concatenate([sh_doc, doc[short]])
            sh_h = np.concatenate([sh_h, h[short]])
            order = np.argsort(sh_doc, kind="stable")
            sh_doc, sh_h = sh_doc[order], sh_h[order]
    return sh_doc, sh_h, counts


def minhash_signatures(texts: pl.Series | Sequence[str], num_perm: int = 64, seed: int = 0) -> np.ndarray:
    """(n, num_perm) uint32 MinHash signatures; empty documents get all-ones rows (0xFFFFFFFF)."""
    series = texts if isinstance(texts, pl.Series) else pl.Series("t", list(texts), dtype=pl.String)
    n = len(series)
    sh_doc, sh_h, _ = shingle_hashes(series, seed)
    a, b = _perm_params(num_perm, seed)
    sig = np.full((n, num_perm), 0xFFFFFFFF, dtype=np.uint32)
    with np.errstate(over="ignore"):
        for start in range(0, len(sh_h), _CHUNK):
            d = sh_doc[start : start + _CHUNK]
            hv = np.multiply.outer(sh_h[start : start + _CHUNK], a)
            hv += b
            hv >>= np.uint64(32)
            bounds = np.flatnonzero(np.r_[True, d[1:] != d[:-1]])
            mins = np.minimum.reduceat(hv, bounds, axis=0).astype(np.uint32)
            ids = d[bounds]
            sig[ids] = np.minimum(sig[ids], mins)
    return sig


def _find(parent: np.ndarray, i: int) -> int:
    root = i
    while parent[root] != root:
        root = parent[root]
    while parent[i] != root:
        parent[i], i = root, parent[i]
    return root


def near_duplicates(texts: pl.Series | Sequence[str], *, threshold: float = 0.8, num_perm: int = 64,
                    seed: int = 0) -> DedupResult:
    """Cluster near-duplicate texts; documents earlier in ``texts`` win their cluster."""
    series = texts if isinstance(texts, pl.Series) else pl.Series("t", list(texts), dtype=pl.String)
    n = len(series)
    dup = np.full(n, -1, dtype=np.int64)
    if n < 2:
        return DedupResult(dup, 0)
    sig = minhash_signatures(series, num_perm, seed)
    tokens = series.cast(pl.String).fill_null("").str.to_lowercase().str.count_matches(TOKEN_PATTERN).to_numpy()
    eligible = np.flatnonzero(tokens >= MIN_TOKENS)
    if len(eligible) < 2:
        return DedupResult(dup, 0)
    r = ROWS_PER_BAND
    pairs_a: list[np.ndarray] = []
    pairs_b: list[np.ndarray] = []
    with np.errstate(over="ignore"):
        for band in range(num_perm // r):
            cols = sig[eligible, band * r : (band + 1) * r].astype(np.uint64)
            key = np.zeros(len(eligible), dtype=np.uint64)
            for j in range(r):
                key = key * np.uint64(0x100000001B3) + cols[:, j]
            order = np.argsort(key, kind="stable")  # stable: the best (lowest index) member first
            ks = key[order]
            starts = np.r_[True, ks[1:] != ks[:-1]]
            run_id = np.cumsum(starts) - 1
            first = order[np.flatnonzero(starts)][run_id]
            member = order
            m = first != member
            if m.any():
                ra, rb = eligible[first[m]], eligible[member[m]]
                agree = (sig[ra] == sig[rb]).mean(axis=1) >= threshold
                pairs_a.append(ra[agree])
                pairs_b.append(rb[agree])
    if not pairs_a:
        return DedupResult(dup, 0)
    pa, pb = np.concatenate(pairs_a), np.concatenate(pairs_b)
    parent = np.arange(n, dtype=np.int64)
    for x, y in zip(pa.tolist(), pb.tolist(), strict=True):
        rx, ry = _find(parent, x), _find(parent, y)
        if rx != ry:  # the smaller index (better priority) becomes the root
            parent[max(rx, ry)] = min(rx, ry)
    involved = np.unique(np.concatenate([pa, pb]))
    roots = np.array([_find(parent, int(i)) for i in involved], dtype=np.int64)
    is_dup = roots != involved
    dup[involved[is_dup]] = roots[is_dup]
    return DedupResult(dup, int(len(np.unique(roots[is_dup]))))
