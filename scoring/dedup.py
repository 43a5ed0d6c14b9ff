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
_BLOCK = 1 << 15  # shingles per block of the signature loop (256 KB of uint64: stays in cache)
_CHUNK = 1 << 11  # candidate pairs compared per step


@dataclass(frozen=True)
class DedupResult:
    """``duplicate_of[i]``: index of the kept member of i's cluster, or -1 (kept / unique)."""

    duplicate_of: np.ndarray
    clusters: int

    @property
    def removed(self) -> int:
        return int((self.duplicate_of >= 0).sum())


#: Texts hashed in one pass by :func:`signatures_and_tokens` (memory per pass, not per corpus).
TEXTS_PER_PASS = 500


def _perm_params(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.integers(1, 2**63 - 1, size=num_perm, dtype=np.uint64) | np.uint64(1)
    b = rng.integers(0, 2**63 - 1, size=num_perm, dtype=np.uint64)
    return a, b


def shingle_hashes(texts: pl.Series, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(doc index per shingle, shingle hash u64, token count per doc); each doc's shingles are contiguous."""
    n = len(texts)
    hashed = texts.cast(pl.String).fill_null("").str.to_lowercase().str.extract_all(TOKEN_PATTERN).list.eval(
        pl.element().hash(seed=seed))
    lens = hashed.list.len().fill_null(0).to_numpy().astype(np.int64, copy=False)
    h = hashed.explode().drop_nulls().to_numpy()
    del hashed
    doc = np.repeat(np.arange(n, dtype=np.int32 if n < 2**31 else np.int64), lens)
    with np.errstate(over="ignore"):
        m = len(h)
        if m >= SHINGLE:
            sh = h[: m - 2] * np.uint64(0x9E3779B97F4A7C15)
            sh += h[1 : m - 1] * np.uint64(0xC2B2AE3D27D4EB4F)
            sh += h[2:]
            ok = doc[: m - 2] == doc[2:]
            sh_doc, sh_h = doc[: m - 2][ok], sh[ok]
            del sh, ok
        else:
            sh_doc, sh_h = np.zeros(0, doc.dtype), np.zeros(0, np.uint64)
        short_doc = (lens > 0) & (lens < SHINGLE)
        if short_doc.any():  # 1–2 word documents (no 3-shingles above): their words are their shingles
            short = np.repeat(short_doc, lens)
            sh_doc = np.concatenate([sh_doc, doc[short]])
            sh_h = np.concatenate([sh_h, h[short]])
    return sh_doc, sh_h, lens


def minhash_signatures(texts: pl.Series | Sequence[str], num_perm: int = 64, seed: int = 0) -> np.ndarray:
    """(n, num_perm) uint32 MinHash signatures; empty documents get all-ones rows (0xFFFFFFFF).

    Entry j of a document is ``min over its shingles s of ((a_j * s + b_j) mod 2**64) >> 32``; the
    shift is monotonic, so it is applied to the minimum only.
    """
    series = texts if isinstance(texts, pl.Series) else pl.Series("t", list(texts), dtype=pl.String)
    sh_doc, sh_h, _ = shingle_hashes(series, seed)
    return _signatures(sh_doc, sh_h, len(series), num_perm, seed)


def _signatures(sh_doc: np.ndarray, sh_h: np.ndarray, n: int, num_perm: int, seed: int) -> np.ndarray:
    a, b = _perm_params(num_perm, seed)
    sig = np.full((num_perm, n), np.iinfo(np.uint64).max, dtype=np.uint64)
    m = len(sh_h)
    if m:
        # blocks of about _BLOCK shingles cut at document starts, so each document lies in one block
        starts = np.flatnonzero(np.r_[True, sh_doc[1:] != sh_doc[:-1]])
        at = np.searchsorted(starts, np.arange(0, m, _BLOCK))
        cuts = np.unique(np.r_[starts[at[at < len(starts)]], m])
        buf = np.empty(int(np.diff(cuts).max()), dtype=np.uint64)
        with np.errstate(over="ignore"):
            for lo, hi in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):
                d, h = sh_doc[lo:hi], sh_h[lo:hi]
                bounds = np.flatnonzero(np.r_[True, d[1:] != d[:-1]])
                ids = d[bounds]
                hv = buf[: hi - lo]
                for j in range(num_perm):  # one permutation at a time: the block stays in cache
                    np.multiply(h, a[j], out=hv)
                    hv += b[j]
                    sig[j, ids] = np.minimum.reduceat(hv, bounds)
    sig >>= np.uint64(32)
    out = np.empty((n, num_perm), dtype=np.uint32)
    out[:] = sig.T
    return out


def _components_min(pa: np.ndarray, pb: np.ndarray, n: int) -> np.ndarray:
    """Label of each of ``n`` nodes: the smallest node index of its connected component (edges pa–pb)."""
    label = np.arange(n, dtype=np.int64)
    while True:
        m = np.minimum(label[pa], label[pb])
        before = label.copy()
        np.minimum.at(label, pa, m)
        np.minimum.at(label, pb, m)
        while True:  # pointer jumping: point at the label's label until stable
            jumped = label[label]
            if np.array_equal(jumped, label):
                break
            label = jumped
        if np.array_equal(label, before):
            return label


def _candidate_pairs(sig: np.ndarray, eligible: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """LSH: (first, member) index pairs of documents sharing a band bucket, each pair once, sorted.

    In every band, each member of a bucket is paired with the bucket's smallest index.
    """
    r = ROWS_PER_BAND
    keys: list[np.ndarray] = []
    with np.errstate(over="ignore"):
        for band in range(sig.shape[1] // r):
            cols = sig[eligible, band * r : (band + 1) * r]
            key = np.zeros(len(eligible), dtype=np.uint64)
            for j in range(r):
                key = key * np.uint64(0x100000001B3) + cols[:, j].astype(np.uint64)
            order = pl.Series(key).arg_sort().to_numpy().astype(np.int64)  # polars: faster than numpy here
            ks = key[order]
            starts = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]])
            lengths = np.diff(np.r_[starts, len(ks)])
            multi = lengths > 1
            if not multi.any():
                continue
            first = np.minimum.reduceat(order, starts)  # the best (lowest position) member of each bucket
            member_first = np.repeat(first[multi], lengths[multi])
            members = order[np.repeat(multi, lengths)]
            m = members != member_first
            n_el = np.uint64(len(eligible))
            keys.append(member_first[m].astype(np.uint64) * n_el + members[m].astype(np.uint64))
    if not keys:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    pairs = pl.Series(np.concatenate(keys)).unique().sort().to_numpy()
    n_el = np.uint64(len(eligible))
    return eligible[(pairs // n_el).astype(np.int64)], eligible[(pairs % n_el).astype(np.int64)]


def signatures_and_tokens(texts: pl.Series | Sequence[str], *, num_perm: int = 64,
                          seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(n, num_perm) uint32 MinHash signatures and the word count of each text.

    A text's signature depends only on the text, ``num_perm`` and ``seed``, so signatures computed batch
    by batch cluster exactly as if computed together (:func:`cluster_signatures`)."""
    series = texts if isinstance(texts, pl.Series) else pl.Series("t", list(texts), dtype=pl.String)
    if len(series) > TEXTS_PER_PASS:  # the shingles of a pass are ~30 bytes per word: bound them, not the corpus
        parts = [signatures_and_tokens(series.slice(at, TEXTS_PER_PASS), num_perm=num_perm, seed=seed)
                 for at in range(0, len(series), TEXTS_PER_PASS)]
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    sh_doc, sh_h, tokens = shingle_hashes(series, seed)
    return _signatures(sh_doc, sh_h, len(series), num_perm, seed), tokens


def near_duplicates(texts: pl.Series | Sequence[str], *, threshold: float = 0.8, num_perm: int = 64,
                    seed: int = 0) -> DedupResult:
    """Cluster near-duplicate texts; documents earlier in ``texts`` win their cluster."""
    series = texts if isinstance(texts, pl.Series) else pl.Series("t", list(texts), dtype=pl.String)
    if len(series) < 2:
        return DedupResult(np.full(len(series), -1, dtype=np.int64), 0)
    sig, tokens = signatures_and_tokens(series, num_perm=num_perm, seed=seed)
    return cluster_signatures(sig, tokens, threshold=threshold)


def cluster_signatures(sig: np.ndarray, tokens: np.ndarray, *, threshold: float = 0.8) -> DedupResult:
    """Near-duplicate clusters of documents given by their signatures (rows of ``sig``, best first) and
    word counts; documents earlier win their cluster."""
    n, num_perm = sig.shape if sig.ndim == 2 else (len(sig), 0)
    dup = np.full(n, -1, dtype=np.int64)
    if n < 2:
        return DedupResult(dup, 0)
    eligible = np.flatnonzero(np.asarray(tokens) >= MIN_TOKENS)
    if len(eligible) < 2:
        return DedupResult(dup, 0)
    ra, rb = _candidate_pairs(sig, eligible)
    if len(ra):
        equal = np.empty(len(ra), dtype=np.int64)
        for start in range(0, len(ra), _CHUNK):  # small blocks: the gathered rows stay in cache
            sl = slice(start, start + _CHUNK)
            equal[sl] = np.count_nonzero(sig[ra[sl]] == sig[rb[sl]], axis=1)
        agree = equal / num_perm >= threshold
        ra, rb = ra[agree], rb[agree]
    if not len(ra):
        return DedupResult(dup, 0)
    label = _components_min(ra, rb, n)
    is_dup = label != np.arange(n)
    dup[is_dup] = label[is_dup]
    return DedupResult(dup, int(np.count_nonzero(np.bincount(label[is_dup], minlength=n))))
