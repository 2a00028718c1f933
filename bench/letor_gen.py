# letor_gen.py: synthetic LETOR-like ranking data (queries, graded labels, realistic features) and raw float32 files.
"""Synthetic learning-to-rank data shared by the conformance tests and bench/make_model.py.

The data imitates public LETOR sets (MSLR-WEB, Yahoo!, MQ2008) closely enough that the
trained trees look like real ones: many repeated values (count features, rounded
ratios), heavy tails (so thresholds span many orders of magnitude), negative scores
(language-model log-likelihoods), features that are missing for part of the documents,
and one feature that is always 0. Labels are grades 0..4 from a hidden function of the
features plus a per-query effect, mostly 0 as in real judgements.

Everything is a pure function of the arguments (numpy Generator with a fixed seed), so
a model trained on it is reproducible and can be cached by its parameters.

Public functions:
    make_letor(n_rows, n_features, qmin, qmax, seed, nan_features, nan_rate) -> LetorData
    make_shaped(shape, n_rows, seed)    a data set shaped like MSN-1, Istella or Yahoo (SHAPES)
    add_edge_values(X, seed, n_cells)   tiny values, denormals, -0.0 in a few cells
    write_raw(path, X) / read_raw(path) the TSRAWF32 matrix format of treescore
"""

from __future__ import annotations

import dataclasses
import struct

import numpy as np

GENERATOR_VERSION = 1  # bump when the output of make_letor changes (invalidates caches)

RAW_MAGIC = b"TSRAWF32"


@dataclasses.dataclass
class LetorData:
    X: np.ndarray          # float32 [n_rows, n_features]; NaN = missing
    y: np.ndarray          # int32 grades 0..4
    groups: np.ndarray     # int64 query sizes, in row order
    qid: np.ndarray        # int64 query id of each row
    kinds: list            # kind of each feature column ("count", "heavy", ...)


def query_sizes(n_rows: int, qmin: int, qmax: int, rng: np.random.Generator) -> np.ndarray:
    """Query sizes uniform in [qmin, qmax] adding up to n_rows (the last one is cut)."""
    sizes = []
    total = 0
    while total < n_rows:
        s = int(rng.integers(qmin, qmax + 1))
        s = min(s, n_rows - total)
        sizes.append(s)
        total += s
    return np.asarray(sizes, dtype=np.int64)


def _feature_kinds(n_features: int, rng: np.random.Generator) -> list:
    """A kind for every column; the last column is the constant-0 feature."""
    cycle = ["count", "heavy", "ratio", "loglik", "count", "heavy", "binary", "ratio", "bm25", "big"]
    kinds = [cycle[(j + int(rng.integers(0, 3))) % len(cycle)] for j in range(n_features)]
    kinds[-1] = "zero"
    return kinds


def _column(kind: str, relevance: np.ndarray, qeff: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One feature column given a latent relevance and per-row query effect."""
    n = relevance.shape[0]
    signal = rng.uniform(0.2, 1.0)
    if kind == "count":      # term counts: Poisson with a relevance-dependent rate, many zeros
        lam = np.exp(0.6 * signal * relevance + 0.3 * qeff) * rng.uniform(0.2, 3.0)
        return rng.poisson(lam).astype(np.float64)
    if kind == "heavy":      # tf-idf like: lognormal with a long tail
        return np.exp(rng.normal(signal * relevance + qeff, 1.5, n)) * 10.0 ** rng.integers(-3, 3)
    if kind == "ratio":      # covered-query-term ratios: few distinct values in [0, 1]
        p = 1.0 / (1.0 + np.exp(-(signal * relevance + qeff)))
        return np.round(p * rng.integers(2, 8)) / rng.integers(2, 8)
    if kind == "loglik":     # LMIR scores: negative, heavy lower tail
        return -np.abs(rng.standard_t(3, n)) * 20.0 + 5.0 * signal * relevance
    if kind == "binary":
        return (rng.random(n) < 1.0 / (1.0 + np.exp(-signal * relevance))).astype(np.float64)
    if kind == "bm25":       # continuous, mostly positive, some zeros
        v = np.maximum(0.0, rng.normal(10.0 * signal * relevance + 5.0 * qeff, 8.0, n))
        return np.round(v, 4)
    if kind == "big":        # URL length / PageRank style integers up to 1e7
        return np.floor(np.exp(rng.uniform(0.0, 16.0, n) + 0.3 * relevance))
    if kind == "zero":
        return np.zeros(n)
    raise ValueError(kind)


def make_letor(n_rows: int = 3000, n_features: int = 40, qmin: int = 20, qmax: int = 100,
               seed: int = 1, nan_features: float = 0.2, nan_rate: float = 0.1) -> LetorData:
    """Generate a LETOR-like data set.

    nan_features: fraction of the columns (never the constant-0 one) that have missing
    values; nan_rate: fraction of the rows missing in each such column (varied +-50%).
    """
    if n_features < 2:
        raise ValueError("need at least 2 features")
    rng = np.random.default_rng(seed)
    groups = query_sizes(n_rows, qmin, qmax, rng)
    qid = np.repeat(np.arange(1, len(groups) + 1, dtype=np.int64), groups)
    # Latent relevance: a per-query difficulty plus a per-document part.
    qdiff = rng.normal(0.0, 1.0, len(groups))[qid - 1]
    rel = rng.normal(0.0, 1.0, n_rows) + 0.5 * qdiff
    kinds = _feature_kinds(n_features, rng)
    X = np.empty((n_rows, n_features), dtype=np.float64)
    for j, kind in enumerate(kinds):
        qeff = rng.normal(0.0, 0.5, len(groups))[qid - 1]
        # Each feature sees the relevance through its own noise, so none is perfect.
        X[:, j] = _column(kind, rel + rng.normal(0.0, 1.0, n_rows), qeff, rng)
    # Hidden grading function: relevance plus a few nonlinear feature interactions.
    score = rel + 0.3 * np.tanh(X[:, 1 % n_features]) - 0.2 * (X[:, 2 % n_features] > np.median(X[:, 2 % n_features]))
    cuts = np.quantile(score, [0.55, 0.8, 0.92, 0.98])
    y = np.searchsorted(cuts, score).astype(np.int32)
    # Missing values in some columns.
    candidates = np.arange(n_features - 1)
    n_nan = int(round(nan_features * (n_features - 1)))
    for j in rng.choice(candidates, size=n_nan, replace=False):
        rate = nan_rate * rng.uniform(0.5, 1.5)
        X[rng.random(n_rows) < rate, j] = np.nan
    return LetorData(X=X.astype(np.float32), y=y, groups=groups, qid=qid, kinds=kinds)


# Values at the edges of float32 and of LightGBM's zero range (kZeroThreshold = 1e-35f):
# its predictor turns |x| <= 1e-35f into 0.0, and missing type Zero treats them as missing.
_F32 = np.float32
_Z = _F32(1e-35)
EDGE_VALUES = np.array([
    0.0, -0.0, 1e-36, -1e-36, 1e-40, -1e-40,                      # tiny, incl. denormals
    np.finfo(np.float32).smallest_subnormal, -np.finfo(np.float32).smallest_subnormal,
    np.finfo(np.float32).tiny, -np.finfo(np.float32).tiny,       # smallest normal
    _Z, -_Z, np.nextafter(_Z, _F32(1)), -np.nextafter(_Z, _F32(1)),  # the zero range edge
    np.nextafter(_Z, _F32(0)), -np.nextafter(_Z, _F32(0)),
    2e-35, -2e-35, 1e-30, -1e-30,
], dtype=np.float32)


def add_edge_values(X: np.ndarray, seed: int = 99, n_cells: int | None = None) -> np.ndarray:
    """A copy of X with EDGE_VALUES written into n_cells random cells (default 2% of cells)."""
    rng = np.random.default_rng(seed)
    out = np.array(X, dtype=np.float32, copy=True)
    if n_cells is None:
        n_cells = max(len(EDGE_VALUES), out.size // 50)
    rows = rng.integers(0, out.shape[0], n_cells)
    cols = rng.integers(0, out.shape[1], n_cells)
    out[rows, cols] = EDGE_VALUES[np.arange(n_cells) % len(EDGE_VALUES)]
    return out


def write_raw(path, X: np.ndarray) -> None:
    """Write X as a treescore raw matrix: b"TSRAWF32", u32 version 1, u32 n_cols, u64 n_rows, f32 LE data."""
    X = np.ascontiguousarray(X, dtype="<f4")
    if X.ndim != 2:
        raise ValueError("write_raw needs a 2-D matrix")
    with open(path, "wb") as f:
        f.write(RAW_MAGIC + struct.pack("<IIQ", 1, X.shape[1], X.shape[0]))
        f.write(X.tobytes(order="C"))


def read_raw(path) -> np.ndarray:
    """Read a treescore raw matrix file written by write_raw."""
    with open(path, "rb") as f:
        head = f.read(24)
        if len(head) != 24 or head[:8] != RAW_MAGIC:
            raise ValueError(f"{path}: not a TSRAWF32 file")
        version, n_cols, n_rows = struct.unpack("<IIQ", head[8:])
        if version != 1:
            raise ValueError(f"{path}: unknown raw version {version}")
        data = np.frombuffer(f.read(), dtype="<f4")
    if data.size != n_rows * n_cols:
        raise ValueError(f"{path}: expected {n_rows * n_cols} floats, found {data.size}")
    return data.reshape(n_rows, n_cols).astype(np.float32)


# ---- Dataset shapes of the papers (added for bench/zoo.py; make_letor's output is unchanged) ----

# The public sets the QuickScorer papers measure on, as shapes for make_shaped():
#   msn:     MSLR-WEB30K / MSN-1, 136 features, dense, 0-4 grades
#   istella: Istella LETOR, 220 features, dense, some features absent (0) for part of the documents
#   yahoo:   Yahoo! LTR Set 1, 700 features, sparse: most features absent (0) for a document
# All: queries of 100-1,000 documents, some features with missing values (NaN), grades 0-4.
SHAPES = {
    "msn": dict(n_features=136, qmin=100, qmax=1000, nan_features=0.2, nan_rate=0.1, absent_max=0.0),
    "istella": dict(n_features=220, qmin=100, qmax=1000, nan_features=0.15, nan_rate=0.1, absent_max=0.3),
    "yahoo": dict(n_features=700, qmin=100, qmax=1000, nan_features=0.05, nan_rate=0.05, absent_max=0.95),
}


def make_shaped(shape: str, n_rows: int, seed: int = 1) -> LetorData:
    """A data set of one of the SHAPES: make_letor with the shape's parameters, then (when
    the shape's absent_max > 0) absent features: every column except the first two (which
    drive the grades) gets a zero rate drawn uniformly in [0, absent_max], and that fraction
    of its non-missing cells become 0.0, as absent entries of a sparse LETOR file read by
    LightGBM. Deterministic in (shape, n_rows, seed); uses its own random stream, so the
    make_letor part is exactly make_letor's output for the same arguments."""
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}; known: {', '.join(SHAPES)}")
    p = dict(SHAPES[shape])
    absent_max = p.pop("absent_max")
    d = make_letor(n_rows=n_rows, seed=seed, **p)
    if absent_max > 0.0:
        rng = np.random.default_rng([seed, 0xAB5E])
        X = d.X
        for j in range(2, X.shape[1]):
            rate = rng.uniform(0.0, absent_max)
            hit = (rng.random(X.shape[0]) < rate) & ~np.isnan(X[:, j])
            X[hit, j] = 0.0
    return d
