#!/usr/bin/env python3
# py_input_fuzz.py: fuzz target of treescore's Python input layer (atheris): arrays, buffers, DataFrames and raw sparse structures built from the input, fed to Model.predict.
"""What it checks, for every input the fuzzer builds:

- ``predict`` returns float64 scores of shape (rows,) or raises ``treescore.Error``
  (with a ``TS_ERR_*`` status) or ``TypeError``; anything else (a crash, IndexError,
  MemoryError from an unchecked size, a hang) is a finding;
- a sparse matrix that predict accepts scores as the dense rows that its entries
  describe, built here entry by entry in Python (absent 0.0 for LightGBM, NaN for
  XGBoost, duplicates summed, columns past the model ignored), compared bit for bit;
- a dense input that predict accepts scores as the float64 C-ordered copy of its values
  (for the LightGBM model, a numpy array or list of another dtype than float32/float64
  as its float32 copy, as LightGBM's predict reads it).

Sparse structures are written into scipy objects attribute by attribute, past scipy's
own checks: decreasing or short ``indptr``, negative or huge indices, mismatched lengths,
float indices, tampered lil rows and dok keys.

Run: ``.venv/bin/python tests/fuzz/py_input_fuzz.py -max_total_time=15`` (libFuzzer
flags; ``make test`` runs it for ``TS_PY_FUZZ_SECONDS``). Without atheris it falls back
to a random-bytes loop for ``-max_total_time`` seconds (seeded, printed). Needs the
package installed and ``TS_FUZZ_MODELS`` or the tests' models (tests/data/models).
"""

from __future__ import annotations

import os
import random
import sys
import time
import warnings
from pathlib import Path

import numpy as np

try:
    import atheris
except ImportError:  # pragma: no cover - the fallback loop
    atheris = None

if atheris is not None:
    with atheris.instrument_imports(include=["treescore"]):
        import treescore
        try:
            import treescore._inputs  # noqa: F401  (the input layer, instrumented for coverage)
        except ImportError:  # a version without it
            pass
else:
    import treescore

import scipy.sparse as sp

try:
    import pandas as pd
except ImportError:  # pragma: no cover
    pd = None

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "data" / "models"
LGB = treescore.Model(model_file=MODELS / "lgb_small_lambdarank.txt", engine="naive", threads=1)
XGB = treescore.Model(model_file=MODELS / "xgb_small_logistic.json", engine="naive", threads=1)
SPARSE_KINDS = ["csr", "csc", "coo", "bsr", "dia", "lil", "dok"]
INDEX_DTYPES = [np.int32, np.int64, np.uint32, np.int8, np.float64, np.uint64]
VALUE_DTYPES = [np.float64, np.float32, np.float16, np.int64, np.uint8, np.bool_, np.complex64, object]
SPECIAL = [0.0, -0.0, np.nan, np.inf, -np.inf, 1e300, -1e-40, 0.5, 1.0, 2.0**31, -1.0, 3.0]


class Source:
    """Draws from the fuzzer's bytes (atheris.FuzzedDataProvider or a bytes reader)."""

    def __init__(self, data: bytes):
        self.fdp = atheris.FuzzedDataProvider(data) if atheris is not None else None
        self.data, self.pos = data, 0

    def int(self, lo: int, hi: int) -> int:
        if self.fdp is not None:
            return self.fdp.ConsumeIntInRange(lo, hi)
        b = self.data[self.pos:self.pos + 4]
        self.pos += 4
        return lo + int.from_bytes(b.ljust(4, b"\0"), "little") % (hi - lo + 1)

    def pick(self, seq):
        return seq[self.int(0, len(seq) - 1)]

    def value(self) -> float:
        k = self.int(0, 2 * len(SPECIAL))
        return SPECIAL[k] if k < len(SPECIAL) else (self.int(-1000, 1000) / 64.0)

    def ints(self, n: int, lo: int, hi: int) -> list:
        return [self.int(lo, hi) for _ in range(n)]


def values(src: Source, n: int, dtype) -> np.ndarray:
    v = np.array([src.value() for _ in range(n)], dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dtype is object:
            return v.astype(object)
        if np.dtype(dtype).kind in "iub":
            v = np.nan_to_num(v, nan=0.0, posinf=9.0, neginf=-9.0)
        return v.astype(dtype)


# ---- building inputs ------------------------------------------------------------------------

def dense(src: Source, width: int):
    rows, cols = src.int(0, 4), src.pick([0, 1, width - 1, width, width + 2])
    base = values(src, (2 * rows + 1) * (2 * cols + 1), src.pick(VALUE_DTYPES[:6])).reshape(2 * rows + 1, 2 * cols + 1)
    how = src.int(0, 6)
    if how == 0:
        X = base[:rows, :cols]
    elif how == 1:
        X = np.asfortranarray(base[:rows, :cols])
    elif how == 2:
        X = base[: 2 * rows: 2, : 2 * cols: 2]
    elif how == 3:
        X = base[::-1, ::-1][:rows, :cols]
    elif how == 4:
        X = base[:rows, :cols].astype(base.dtype.newbyteorder())  # other byte order
    elif how == 5:
        X = memoryview(np.ascontiguousarray(base[:rows, :cols]))
    else:
        X = base[:rows, :cols].tolist()
    try:
        D = np.array(X, dtype=np.float64)
    except (TypeError, ValueError):
        D = None
    return X, D


def frame(src: Source, model):
    names = model.feature_names or [f"f{i}" for i in range(model.num_features)]
    rows = src.int(0, 3)
    labels = []
    for _ in range(src.int(0, len(names) + 3)):
        k = src.int(0, 4)
        labels.append(names[src.int(0, len(names) - 1)] if k < 3 else src.pick(["x", "a b", 0, 7, 2.5, None]))
    cols = {i: values(src, rows, src.pick([np.float64, np.float32, np.int64, object])) for i in range(len(labels))}
    if labels and src.int(0, 3) == 0:
        cols[0] = pd.Categorical(src.ints(rows, 0, 2), categories=[0, 1])  # 2: not a category
    df = pd.DataFrame(cols, index=range(rows))
    df.columns = labels
    return df, None


def raw_index(src: Source, n: int, lo: int, hi: int):
    return np.array(src.ints(n, lo, hi)).astype(src.pick(INDEX_DTYPES))


def sparse(src: Source, width: int):
    """A scipy object whose structure is written from the input, checked or not."""
    kind = src.pick(SPARSE_KINDS)
    array = src.int(0, 1) == 1
    n, m = src.int(0, 5), src.pick([0, 1, width, width + 3, 1 << src.int(4, 31)])
    nnz = src.int(0, 8)
    bad = src.int(0, 3) == 0  # sometimes out-of-range values
    lo, hi = (-3, max(n, m) + 3) if bad else (0, None)
    ctor = {"csr": (sp.csr_array if array else sp.csr_matrix), "csc": (sp.csc_array if array else sp.csc_matrix),
            "coo": (sp.coo_array if array else sp.coo_matrix), "bsr": (sp.bsr_array if array else sp.bsr_matrix),
            "dia": (sp.dia_array if array else sp.dia_matrix), "lil": (sp.lil_array if array else sp.lil_matrix),
            "dok": (sp.dok_array if array else sp.dok_matrix)}[kind]
    if kind in ("csr", "csc"):
        major, minor = (n, m) if kind == "csr" else (m, n)
        if major > 64:
            major = 64
            n, m = (64, m) if kind == "csr" else (n, 64)
        X = ctor((n, m))
        ptr = sorted(src.ints(major + 1, 0, nnz)) if not bad else src.ints(src.int(0, major + 2), lo, nnz + 2)
        X.indptr = np.array(ptr).astype(src.pick(INDEX_DTYPES))
        X.indices = raw_index(src, nnz, lo, (hi or max(minor - 1, 0)))
        X.data = values(src, src.int(0, nnz + 1) if bad else nnz, src.pick(VALUE_DTYPES))
        return X
    if kind == "coo":
        X = ctor((n, m))
        k = src.int(0, nnz + 1) if bad else nnz
        rows, cols = raw_index(src, nnz, lo, hi or max(n - 1, 0)), raw_index(src, k, lo, hi or max(m - 1, 0))
        if hasattr(X, "coords"):
            X.coords = (rows, cols)
        else:
            X.row, X.col = rows, cols
        X.data = values(src, nnz, src.pick(VALUE_DTYPES))
        return X
    if kind == "bsr":
        R, C = src.pick([1, 2]), src.pick([1, 2])
        n, m = n * R, min(m, 64) * C
        X = ctor((n, m), blocksize=(R, C))
        X.indptr = np.array(sorted(src.ints(n // R + 1, 0, nnz)) if not bad else src.ints(n // R + 1, lo, nnz + 1))
        X.indices = raw_index(src, nnz, lo, hi or max(m // C - 1, 0))
        X.data = values(src, nnz * R * C, np.float64).reshape(nnz, R, C)
        return X
    if kind == "dia":
        k = src.int(0, 3)
        X = ctor((n, min(m, 64)))
        X.offsets = raw_index(src, k, -6, 6)
        X.data = values(src, k * src.int(0, 9), np.float64).reshape(k, -1) if k else np.zeros((0, 0))
        return X
    if kind == "lil":
        X = ctor((n, m))
        for i in range(n):
            cols = src.ints(src.int(0, 3), lo, hi or max(m - 1, 0))
            X.rows[i] = cols if not bad or src.int(0, 1) else [float(c) for c in cols]
            X.data[i] = list(values(src, len(cols) if not bad else src.int(0, 3), np.float64))
        return X
    X = ctor((n, m))
    store = X._dict if hasattr(X, "_dict") else X
    for _ in range(nnz):
        dict.__setitem__(store, (src.int(lo, hi or max(n - 1, 0)), src.int(lo, hi or max(m - 1, 0))), src.value())
    return X


# ---- the checks ---------------------------------------------------------------------------

def entries(X):
    """(row, col, value) of every entry a sparse X stores, decoded here in plain Python
    from its raw structure (not by scipy, whose converters trust that structure);
    AssertionError when the structure is not valid, which predict must then have refused."""
    n, m = X.shape
    fmt = X.format
    if fmt in ("csr", "csc", "bsr"):
        ptr, idx = [int(v) for v in X.indptr], [int(v) for v in X.indices]
        assert all(float(v) == int(v) for v in X.indices) and X.indptr.dtype.kind in "iu" and X.indices.dtype.kind in "iu"
        R, C = X.data.shape[1:] if fmt == "bsr" else (1, 1)
        major, minor = {"csr": (n, m), "csc": (m, n), "bsr": (n // R, m // C)}[fmt]
        assert len(ptr) == major + 1 and ptr[0] == 0 and all(a <= b for a, b in zip(ptr, ptr[1:]))
        assert ptr[-1] <= len(idx) and len(idx) == len(X.data)
        for i in range(major):
            for p in range(ptr[i], ptr[i + 1]):
                assert 0 <= idx[p] < minor
                if fmt == "csr":
                    yield i, idx[p], X.data[p]
                elif fmt == "csc":
                    yield idx[p], i, X.data[p]
                else:
                    for r in range(R):
                        for c in range(C):
                            yield i * R + r, idx[p] * C + c, X.data[p][r][c]
    elif fmt == "coo":
        rows, cols = (X.coords if hasattr(X, "coords") else (X.row, X.col))
        assert rows.dtype.kind in "iu" and cols.dtype.kind in "iu" and len(rows) == len(cols) == len(X.data)
        for r, c, v in zip(rows.tolist(), cols.tolist(), X.data.tolist()):
            assert 0 <= r < n and 0 <= c < m
            yield r, c, v
    elif fmt == "dia":
        offs = X.offsets.tolist()
        assert X.offsets.dtype.kind in "iu" and len(set(offs)) == len(offs) == X.data.shape[0]
        for d, off in enumerate(offs):
            for j in range(min(X.data.shape[1], m)):
                if 0 <= j - off < n and X.data[d, j] != 0:
                    yield j - off, j, X.data[d, j]
    elif fmt == "lil":
        for i in range(n):
            assert len(X.rows[i]) == len(X.data[i])
            for c, v in zip(X.rows[i], X.data[i]):
                assert type(c) is int and 0 <= c < m
                yield i, c, v
    else:
        for (r, c), v in X.items():
            assert type(r) is int and type(c) is int and 0 <= r < n and 0 <= c < m
            yield r, c, v


def sparse_reference(X, model, absent: float):
    """The dense rows a valid sparse X stands for, of the model's width: entries summed,
    absent ones `absent`, columns past the model's dropped."""
    w = model.num_features
    D = np.full((X.shape[0], w), absent)
    seen = set()
    for r, c, v in entries(X):
        if c < w:
            if (r, c) not in seen:
                D[r, c] = 0.0
                seen.add((r, c))
            D[r, c] += float(v)
    return D


def check(model, X, D, is_sparse: bool) -> None:
    try:
        y = model.predict(X, raw_score=True)
    except treescore.Error as e:
        assert isinstance(e.status, str) and e.status.startswith("TS_ERR_"), e.status
        return
    except TypeError:
        return
    assert isinstance(y, np.ndarray) and y.dtype == np.float64 and y.ndim == 1, (type(y), getattr(y, "shape", None))
    if is_sparse:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            D = sparse_reference(X, model, 0.0 if model is LGB else np.nan)
    if D is not None and model is LGB and isinstance(X, (np.ndarray, list)):
        # LightGBM's predict reads a numpy array or list of any dtype but float32/float64 as
        # float32, and so does treescore for a LightGBM model
        a = np.array(X) if isinstance(X, list) else X
        if not (a.dtype.kind == "f" and a.dtype.itemsize in (4, 8)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                D = np.array(a, dtype=np.float32).astype(np.float64)
    if D is not None:
        want = model.predict(np.ascontiguousarray(D), raw_score=True)
        assert np.array_equal(y, want, equal_nan=True), (y, want)


def test_one_input(data: bytes) -> None:
    src = Source(data)
    model = src.pick([LGB, XGB])
    what = src.int(0, 5 if pd is not None else 3)
    if what <= 1:
        X, D = dense(src, model.num_features)
        check(model, X, D, False)
    elif what <= 3:
        check(model, sparse(src, model.num_features), None, True)
    else:
        X, D = frame(src, model)
        check(model, X, D, False)


def main() -> None:
    warnings.simplefilter("ignore")
    if atheris is not None:
        atheris.Setup(sys.argv, test_one_input)
        atheris.Fuzz()
        return
    seconds = next((float(a.split("=", 1)[1]) for a in sys.argv[1:] if a.startswith("-max_total_time=")), 15.0)
    seed = int(os.environ.get("TS_FUZZ_SEED", time.time_ns() % 2**32))
    print(f"py_input_fuzz: no atheris, random inputs for {seconds:g} s, seed {seed}", flush=True)
    rng = random.Random(seed)
    end, runs = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        test_one_input(bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 512))))
        runs += 1
    print(f"py_input_fuzz: {runs} inputs, no finding")


if __name__ == "__main__":
    main()
