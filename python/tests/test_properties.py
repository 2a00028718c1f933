# test_properties.py: property-based tests (hypothesis) of the input layer: every array, DataFrame and sparse input scores as its dense float64 equivalent, or raises treescore.Error.
"""The property: for any input ``X``, ``predict(X)`` either equals ``predict(D)`` for the
plain float64 C-ordered array ``D`` that ``X`` stands for (built here independently of
treescore's conversion), or both raise ``treescore.Error``; a ``TypeError`` only for
data that is not numbers.

Profiles (``HYPOTHESIS_PROFILE``): ``treescore-ci`` (default, a few seconds per test, as
``make test`` runs it), ``treescore-long`` (thousands of examples; for long runs by hand).
No example database is written (the tests run from the repository root)."""

from __future__ import annotations

import os
import tempfile
import warnings

import numpy as np
import pytest

# hypothesis's caches (unicode tables) go to a temporary directory, not .hypothesis/ in
# the directory pytest runs from (the repository root in make test)
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", tempfile.mkdtemp(prefix="treescore-hypothesis-"))

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import treescore  # noqa: E402
from conftest import N_FEATURES, NAMES  # noqa: E402

settings.register_profile("treescore-ci", max_examples=60, deadline=None, database=None, derandomize=False,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("treescore-long", max_examples=8000, deadline=None, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "treescore-ci"))

DTYPES = ["<f2", "<f4", "<f8", ">f4", ">f8", "i1", "<i2", ">i4", "<i8", "u1", "<u8", "?"]
FORMATS = ["csr", "csc", "coo", "bsr", "dia", "lil", "dok"]
# values near the models' thresholds matter less than the edges: NaN, infinities, zeros, huge
EDGE = st.sampled_from([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-40, -1e-36, 1e38, 3.5e38, 0.5, -0.5, 1.0])
VALUES = st.one_of(EDGE, st.floats(-4, 4, allow_nan=False, width=32))


@pytest.fixture(scope="module")
def models(lgb_file, xgb_file):
    """LightGBM with names feat_a..feat_h (absent sparse entries 0.0), XGBoost without
    names (absent entries missing)."""
    return {"lgb": treescore.Model(model_file=lgb_file, engine="naive", threads=1),
            "xgb": treescore.Model(model_file=xgb_file, engine="naive", threads=1)}


def outcome(f):
    """("ok", scores) or ("error", status): what a call gives."""
    try:
        return ("ok", f())
    except treescore.Error as e:
        return ("error", e.status)


def same(got, want) -> bool:
    if got[0] != want[0]:
        return False
    return got[0] == "error" or (got[1].shape == want[1].shape and np.array_equal(got[1], want[1], equal_nan=True))


def reference(m, D: np.ndarray):
    return outcome(lambda: m.predict(np.ascontiguousarray(D, dtype=np.float64), raw_score=True))


# ---- dense arrays: every dtype, layout, shape -----------------------------------------------

@st.composite
def dense_inputs(draw):
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    rows = draw(st.integers(0, 5))
    cols = draw(st.sampled_from([0, 1, 5, N_FEATURES - 1, N_FEATURES, N_FEATURES + 3, 2 * N_FEATURES + 1]))
    base = draw(hnp.arrays(np.float64, (rows * 2 + 1, cols * 2 + 1), elements=VALUES))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = base.astype(dtype) if dtype.kind != "b" else base > 0
    layout = draw(st.sampled_from(["C", "F", "step", "reverse", "transpose", "list", "object"]))
    if layout == "C":
        X = np.ascontiguousarray(base[:rows, :cols])
    elif layout == "F":
        X = np.asfortranarray(base[:rows, :cols])
    elif layout == "step":
        X = base[: 2 * rows: 2, : 2 * cols: 2]
    elif layout == "reverse":
        X = base[rows - 1:: -1, cols - 1:: -1] if rows and cols else base[:rows, :cols]
    elif layout == "transpose":
        X = np.ascontiguousarray(base[:cols, :rows]).T if rows <= base.shape[0] and cols <= base.shape[1] else base
    else:
        X = base[:rows, :cols]
    D = np.array(X, dtype=np.float64)  # the values X stands for, widened exactly
    if layout == "list" and X.shape[0] > 0:  # [] cannot say how many columns it has
        X = X.tolist()
    elif layout == "object":
        X = X.astype(object)
    return X, D


def lightgbm_values(X, D):
    """The values a LightGBM or XGBoost model reads from X: a numpy array or list of any
    dtype but float32/float64 is converted to float32 first, as LightGBM's Booster.predict
    and XGBoost's DMatrix do (one rounding)."""
    a = np.array(X) if isinstance(X, list) else X  # a list's dtype as numpy infers it
    if isinstance(a, np.ndarray) and not (a.dtype.kind == "f" and a.dtype.itemsize in (4, 8)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.array(a, dtype=np.float32).astype(np.float64)
    return D


@given(dense_inputs(), st.sampled_from(["lgb", "xgb"]))
def test_dense_any_layout(models, inp, which):
    X, D = inp
    m = models[which]
    D = lightgbm_values(X, D)  # XGBoost too rounds such an array to float32 in one step
    assert same(outcome(lambda: m.predict(X, raw_score=True)), reference(m, D))


# ---- DataFrames: names, order, extras, duplicates, dtypes, NA --------------------------------

@st.composite
def frames(draw):
    """A DataFrame of the LightGBM model's names (all, or one left out), in any order, with
    extra columns (names that may collide with the model's, also after LightGBM's
    space-to-underscore; ints; text) and mixed dtypes with NA; and each column's label
    and float64 values as written (NA as NaN)."""
    pd = pytest.importorskip("pandas")
    rows = draw(st.integers(0, 5))
    present = draw(st.lists(st.sampled_from(NAMES), unique=True, min_size=N_FEATURES - 1, max_size=N_FEATURES)
                   if draw(st.booleans()) else st.permutations(NAMES))
    extras = draw(st.lists(st.one_of(st.sampled_from(["extra", "feat a", "feat_a", "Column_0", "x y"]),
                                     st.integers(-2, 20), st.text(max_size=4)), max_size=3))
    labels = draw(st.permutations(list(present) + extras))
    data, written = {}, []
    for j, lab in enumerate(labels):
        v = draw(hnp.arrays(np.float64, (rows,), elements=VALUES))
        kind = draw(st.sampled_from(["f8", "f4", "Float64", "Int64", "bool"]))
        if kind == "f4":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                col = pd.Series(v.astype(np.float32))
            v = col.to_numpy(dtype=np.float64)
        elif kind == "Float64":
            col = pd.Series(v, dtype="Float64")  # NaN becomes <NA>: still missing
        elif kind == "Int64" and np.all(np.isfinite(v)) and np.all(np.abs(v) < 2**53):
            v = np.trunc(v)
            col = pd.Series(v.astype(np.int64), dtype="Int64")
            if rows and draw(st.booleans()):
                col.iloc[0] = pd.NA
                v[0] = np.nan
        elif kind == "bool":
            col = pd.Series(v > 0)
            v = (v > 0).astype(np.float64)
        else:
            col = pd.Series(v)
        data[j] = col
        written.append((lab, v))
    df = pd.DataFrame(data, index=range(rows))
    df.columns = labels
    return df, written


def frame_expectation(written, rows: int):
    """By the documented rule (the LightGBM model names feat_a..feat_h; a column feeds the
    feature its label names, str(label) with spaces read as underscores): the model-order
    matrix when each name is given by exactly one column, else None (an Error)."""
    D = np.empty((rows, N_FEATURES))
    for i, name in enumerate(NAMES):
        cols = [v for lab, v in written if str(lab).replace(" ", "_") == name]
        if len(cols) != 1:
            return None
        D[:, i] = cols[0]
    return D


@given(frames())
def test_dataframes_by_name(models, case):
    df, written = case
    m = models["lgb"]
    want = frame_expectation(written, len(df))
    got = outcome(lambda: m.predict(df, raw_score=True))
    if want is None:
        assert got[0] == "error" and got[1] == "TS_ERR_SHAPE"
    else:
        assert same(got, reference(m, want))


# ---- sparse: every format, random structure ---------------------------------------------------

@st.composite
def sparse_inputs(draw):
    sp = pytest.importorskip("scipy.sparse")
    rows = draw(st.integers(0, 6))
    width = draw(st.sampled_from([0, 3, N_FEATURES, N_FEATURES + 5, 64]))
    fmt = draw(st.sampled_from(FORMATS))
    if fmt == "bsr":  # blocks must divide the shape
        rows, width = rows - rows % 2, width - width % 2
    nnz = draw(st.integers(0, rows * width)) if rows and width else 0
    r = np.array(draw(st.lists(st.integers(0, max(rows - 1, 0)), min_size=nnz, max_size=nnz)), dtype=np.int64)
    c = np.array(draw(st.lists(st.integers(0, max(width - 1, 0)), min_size=nnz, max_size=nnz)), dtype=np.int64)
    v = np.array(draw(st.lists(VALUES, min_size=nnz, max_size=nnz)), dtype=np.float64)
    dtype = draw(st.sampled_from([np.float64, np.float32, np.int32]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        v = np.nan_to_num(v, nan=0.0, posinf=7.0, neginf=-7.0).astype(np.int32) if dtype == np.int32 else v.astype(dtype)
    cls = draw(st.sampled_from([sp.coo_matrix, sp.coo_array]))
    S = cls((v, (r, c)), shape=(rows, width))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        S = S.tobsr(blocksize=(2, 2)) if fmt == "bsr" and rows and width else S.asformat(fmt)
    return S


def sparse_expectation(S, absent: float) -> np.ndarray:
    """The dense rows S stands for, of the model's width: present entries (those scipy's
    tocoo() lists) summed, absent ones `absent`, columns past the matrix absent."""
    C = S.tocoo()
    n, w = C.shape
    D = np.full((n, max(w, N_FEATURES)), absent)
    D[C.row, C.col] = 0.0
    np.add.at(D, (C.row, C.col), C.data.astype(np.float64))
    return D[:, :N_FEATURES]


@given(sparse_inputs(), st.sampled_from(["lgb", "xgb"]))
@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
def test_sparse_any_format(models, S, which):
    m = models[which]
    absent = 0.0 if which == "lgb" else np.nan
    assert same(outcome(lambda: m.predict(S, raw_score=True)), reference(m, sparse_expectation(S, absent)))
