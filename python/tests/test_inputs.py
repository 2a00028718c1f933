# test_inputs.py: regression tests of the Python input layer (issue 29, issue 28 item 1): buffers, model files, sparse structure, names, counts, errors.
"""One test (or a few) per defect, each failing on the code before its fix. Crashes,
hangs and runaway allocations of the old code run in a child process (``run_child``)
under a time and address-space limit, so that a regression fails its test rather than
the whole session."""

from __future__ import annotations

import ctypes
import json
import os
import resource
import subprocess
import sys
import textwrap
import time
import tracemalloc

import numpy as np
import pytest

import treescore
from conftest import N_FEATURES, NAMES, make_data

SPARSE_FORMATS = ["csr", "csc", "coo", "bsr", "dia", "lil", "dok"]


def run_child(code: str, timeout: float = 60, memory: int = 2 << 30) -> subprocess.CompletedProcess:
    """Runs ``code`` in a fresh interpreter with at most ``memory`` bytes of address space."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, preexec_fn=limit, env=dict(os.environ, OMP_NUM_THREADS="1"))


@pytest.fixture(scope="module")
def lgb_model(lgb_file):
    return treescore.Model(model_file=lgb_file, engine="naive", threads=1)


# ---- item 1: buffers -----------------------------------------------------------------------

def test_ctypes_2d_array_is_read_as_c_order(lgb_file):
    """A 2-D ctypes array exports no strides (NULL: C order); _core read strides[0] and
    crashed. It is now scored in place, as the same rows in numpy."""
    r = run_child(f"""
        import ctypes, numpy as np, treescore
        m = treescore.Model(model_file={str(lgb_file)!r}, engine="naive", threads=1)
        for ct, dt in ((ctypes.c_double, np.float64), (ctypes.c_float, np.float32)):
            a = ((ct * {N_FEATURES}) * 3)()
            for i in range(3):
                for j in range({N_FEATURES}):
                    a[i][j] = (i - 1) * 0.5 + j * 0.25
            want = m.predict(np.ctypeslib.as_array(a).astype(dt))
            assert np.array_equal(m.predict(a), want), (m.predict(a), want)
            assert m.predict(((ct * {N_FEATURES}) * 0)()).shape == (0,)
        try:
            m.predict(((ctypes.c_double * 3) * 2)())
        except treescore.Error as e:
            assert e.status == "TS_ERR_SHAPE", e.status
        else:
            raise AssertionError("3 columns accepted")
        print("ok")
    """)
    assert r.returncode == 0 and r.stdout.strip() == "ok", (r.returncode, r.stderr[-2000:])


def test_buffers_of_other_layouts(lgb_model, test_rows):
    ref = lgb_model.predict(test_rows)
    assert np.array_equal(lgb_model.predict(memoryview(np.ascontiguousarray(test_rows))), ref)
    assert np.array_equal(lgb_model.predict(test_rows[::-1]), ref[::-1])  # negative row stride
    assert np.array_equal(lgb_model.predict(np.hstack([test_rows, test_rows])[:, ::2][:, :N_FEATURES]),
                          lgb_model.predict(np.hstack([test_rows, test_rows])[:, ::2][:, :N_FEATURES].copy()))
    swapped = test_rows.astype(np.float64).byteswap().view(test_rows.dtype.newbyteorder())
    assert np.array_equal(lgb_model.predict(swapped), ref)
    with pytest.raises(treescore.Error, match="0 columns but the model reads 8") as e:
        lgb_model.predict(np.empty((5, 0)))
    assert e.value.status == "TS_ERR_SHAPE"
    with pytest.raises(treescore.Error, match="3 columns") as e:
        lgb_model.predict(np.empty((0, 3)))
    assert e.value.status == "TS_ERR_SHAPE"


# ---- items 4/5: model files ----------------------------------------------------------------

def test_model_file_fifo_refused(tmp_path):
    """A FIFO with no writer blocked open() forever."""
    fifo = tmp_path / "model.fifo"
    os.mkfifo(fifo)
    r = run_child(f"""
        import treescore
        try:
            treescore.Model(model_file={str(fifo)!r})
        except treescore.Error as e:
            print(e.status, e)
    """, timeout=20)
    assert r.returncode == 0 and r.stdout.startswith("TS_ERR_IO") and "not a regular file" in r.stdout, r


def test_model_file_device_and_directory_refused(tmp_path):
    """/dev/zero was read until memory ran out."""
    r = run_child("""
        import treescore
        try:
            treescore.Model(model_file="/dev/zero")
        except treescore.Error as e:
            print(e.status)
    """, timeout=20, memory=1 << 30)
    assert r.returncode == 0 and r.stdout.strip() == "TS_ERR_IO", (r.stdout, r.stderr[-500:])
    with pytest.raises(treescore.Error, match="not a regular file") as e:
        treescore.Model(model_file=tmp_path)
    assert e.value.status == "TS_ERR_IO"
    # a directory was told "read it yourself and pass model_str=", which cannot be done
    assert "is a directory" in str(e.value) and "model_str" not in str(e.value), str(e.value)
    with pytest.raises(FileNotFoundError):
        treescore.Model(model_file=tmp_path / "absent.txt")


def test_model_file_over_the_limit_is_not_read(tmp_path):
    """A 5 GiB (sparse) file was read whole before the loader refused it."""
    assert treescore._core.max_model_bytes == 1 << 32  # io/limits.h TSIO_MAX_MODEL_BYTES
    big = tmp_path / "big.txt"
    with open(big, "wb") as f:
        f.truncate(5 << 30)
    r = run_child(f"""
        import treescore
        try:
            treescore.Model(model_file={str(big)!r})
        except treescore.Error as e:
            print(e.status, e)
    """, timeout=30, memory=1 << 30)
    assert r.returncode == 0 and r.stdout.startswith("TS_ERR_LIMIT"), (r.stdout, r.stderr[-500:])


# ---- items 3, 6, 11, 13: sparse input ----------------------------------------------------------

def test_csr_decreasing_indptr_refused(lgb_file):
    """sum_duplicates on a CSR whose indptr decreases corrupted the heap (abort at exit)."""
    r = run_child(f"""
        import numpy as np, scipy.sparse as sp, treescore
        m = treescore.Model(model_file={str(lgb_file)!r}, engine="naive", threads=1)
        X = sp.csr_matrix((np.ones(4), np.array([0, 1, 2, 3]), np.array([0, 3, 1, 4])), shape=(3, 8))
        try:
            m.predict(X)
        except treescore.Error as e:
            print(e.status, e)
    """)
    assert r.returncode == 0 and r.stdout.startswith("TS_ERR_INVALID_ARGUMENT") and "indptr decreases" in r.stdout, r


def _malformed(sp):
    """(name, matrix) pairs of broken structure, one or more per format."""
    def csr(data, indices, indptr, shape=(3, 8), cls=sp.csr_matrix):
        X = cls((np.ones(1), [0], [0, 1, 1, 1]), shape=shape)
        X.data, X.indices, X.indptr = np.asarray(data, float), np.asarray(indices), np.asarray(indptr)
        return X
    out = [
        ("csr negative column", csr([1.0], [-1], [0, 1, 1, 1])),
        ("csr column past the shape", csr([1.0], [8], [0, 1, 1, 1])),
        ("csr indptr not from 0", csr([1.0, 2.0], [0, 1], [1, 1, 2, 2])),
        ("csr indptr past nnz", csr([1.0], [0], [0, 1, 1, 5])),
        ("csr indptr too short", csr([1.0], [0], [0, 1])),
        ("csr float indices", csr([1.0], np.array([0.0]), [0, 1, 1, 1])),
        ("csr_array negative column", csr([1.0], [-3], [0, 1, 1, 1], cls=sp.csr_array)),
    ]
    csc = sp.csc_matrix(np.eye(3, 8))
    csc.indices = np.array([0, 5, 2])
    out.append(("csc row past the shape", csc))
    csc2 = sp.csc_array(np.eye(3, 8))
    csc2.indptr = csc2.indptr[::-1].copy()
    out.append(("csc_array decreasing indptr", csc2))
    coo = sp.coo_matrix(np.eye(3, 8))
    coo.col = np.array([0, -1, 2])
    out.append(("coo negative column", coo))
    coo2 = sp.coo_array(np.eye(3, 8))
    coo2.coords = (np.array([0, 1, 3]), coo2.coords[1])
    out.append(("coo_array row past the shape", coo2))
    bsr = sp.bsr_matrix(np.eye(4, 8), blocksize=(2, 2))
    bsr.indices = np.array([0, 4])
    out.append(("bsr block column past the shape", bsr))
    bsr2 = sp.bsr_array(np.eye(4, 8), blocksize=(2, 2))
    bsr2.indptr = np.array([0, 2, 1])
    out.append(("bsr_array decreasing indptr", bsr2))
    dia = sp.dia_matrix(np.eye(3, 8))
    dia.offsets = np.array([0.5])
    out.append(("dia float offsets", dia))
    lil = sp.lil_matrix((3, 8))
    lil[0, 1] = 2.0
    lil.rows[0] = [-1]
    out.append(("lil negative column", lil))
    dok = sp.dok_matrix((3, 8))
    dok[0, 1] = 2.0
    store = dok._dict if hasattr(dok, "_dict") else dok
    dict.__setitem__(store, (0, 9), 1.0)
    out.append(("dok column past the shape", dok))
    return out


def test_malformed_sparse_structure_refused(lgb_model):
    """Every format's structure is checked before any index is used: a negative column
    index no longer wraps to the last column, an index past the shape no longer raises
    numpy's IndexError."""
    sp = pytest.importorskip("scipy.sparse")
    for name, X in _malformed(sp):
        with pytest.raises(treescore.Error, match="malformed sparse matrix") as e:
            lgb_model.predict(X)
        assert e.value.status == "TS_ERR_INVALID_ARGUMENT", name


@pytest.mark.parametrize("fmt", SPARSE_FORMATS)
@pytest.mark.parametrize("array", [False, True])
def test_sparse_every_format(fmt, array, lgb_model, xgb_file, test_rows):
    """Every format (matrix and array) scores as its dense equivalent: absent entries 0.0
    for LightGBM, missing for XGBoost; narrower and wider than the model."""
    sp = pytest.importorskip("scipy.sparse")
    xgb_model = treescore.Model(model_file=xgb_file, engine="naive", threads=1)
    X = np.where(np.isnan(test_rows[:64]), 0.0, test_rows[:64])
    X[np.abs(X) < 0.5] = 0.0
    for width in (N_FEATURES, 5, N_FEATURES + 7):
        D = np.zeros((len(X), width))
        D[:, :min(width, N_FEATURES)] = X[:, :min(width, N_FEATURES)]
        if width > N_FEATURES:
            D[:, N_FEATURES:] = 3.0
        S = (sp.csr_array if array else sp.csr_matrix)(D).asformat(fmt)
        full = np.zeros((len(X), N_FEATURES))
        full[:, :min(width, N_FEATURES)] = D[:, :N_FEATURES]
        assert np.array_equal(lgb_model.predict(S), lgb_model.predict(full))
        missing = np.where(full == 0.0, np.nan, full)
        assert np.array_equal(xgb_model.predict(S, raw_score=True), xgb_model.predict(missing, raw_score=True))


def test_sparse_duplicates_summed_and_explicit_zeros(xgb_file):
    sp = pytest.importorskip("scipy.sparse")
    m = treescore.Model(model_file=xgb_file, engine="naive", threads=1)
    # (0, 1) twice (summed, as scipy), (1, 2) an explicit zero (present for XGBoost)
    X = sp.coo_matrix((np.array([0.25, 0.5, 0.0]), (np.array([0, 0, 1]), np.array([1, 1, 2]))), shape=(2, 8))
    D = np.full((2, 8), np.nan)
    D[0, 1], D[1, 2] = 0.75, 0.0
    assert np.array_equal(m.predict(X, raw_score=True), m.predict(D, raw_score=True))
    assert np.array_equal(m.predict(X.tocsr(), raw_score=True), m.predict(D, raw_score=True))


def _timed_peak(fn, *args):
    """fn(*args), its wall time in seconds and the peak of Python's traced allocations."""
    tracemalloc.start()
    t = time.perf_counter()
    got = fn(*args)
    seconds = time.perf_counter() - t
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return got, seconds, peak


def test_wide_sparse_expands_only_the_model_columns(lgb_model):
    """200 x 2^24 CSR took 5 s (full-width dense rows); 1 x 2^31 asked for 16 GiB."""
    sp = pytest.importorskip("scipy.sparse")
    for n, width in ((200, 1 << 24), (1, 1 << 31)):
        rows = np.arange(n)
        X = sp.csr_matrix((np.r_[np.full(n, 0.75), np.ones(n)], (np.r_[rows, rows], np.r_[np.full(n, 2), np.full(n, width - 1)])),
                          shape=(n, width))
        D = np.zeros((n, N_FEATURES))
        D[:, 2] = 0.75
        got, seconds, peak = _timed_peak(lgb_model.predict, X)
        assert np.array_equal(got, lgb_model.predict(D))
        assert peak < 64 << 20 and seconds < 2.0, (n, width, peak, seconds)


def test_sparse_rows_of_a_wide_model(tmp_path):
    """A model declaring 2^24 features and reading 4 (LightGBM max_feature_idx=16777215,
    as trained on hashed SVMlight features) expanded each sparse row to 2^24 doubles
    (128 MiB) and scored one row per call: 22 ms a row, 44 s for these 2,000 rows. Sparse
    rows now expand to the 4 columns the model reads, scored by a packed scorer (the C
    API's packed_columns): the same bits as the CLI, which reads them so."""
    import re
    import subprocess
    from conftest import ROOT, cli_binary
    sp = pytest.importorskip("scipy.sparse")
    text = (ROOT / "tests" / "cli" / "test_wide_model.py").read_text()
    model = re.search(r'WIDE_MODEL = """(.*?)"""', text, re.S).group(1)
    m = treescore.Model(model_str=model, threads=1)
    assert m.num_features == 1 << 24 and m._core.columns_for() == [2, 5, 16777000, 16777001]
    n, rng = 2000, np.random.default_rng(0)
    used = rng.normal(size=(n, 4))
    used[rng.random(used.shape) < 0.3] = 0
    used[:, 3] = rng.integers(0, 4, n)  # a categorical column
    rows = np.r_[np.repeat(np.arange(n), 4), np.repeat(np.arange(n), 3)]
    cols = np.r_[np.tile([2, 5, 16777000, 16777001], n), rng.integers(0, 1 << 24, 3 * n)]
    X = sp.coo_matrix((np.r_[used.ravel(), rng.normal(size=3 * n)], (rows, cols)), shape=(n, 1 << 24)).tocsr()
    X.sum_duplicates()
    got, seconds, peak = _timed_peak(m.predict, X)
    assert seconds < 2.0 and peak < 64 << 20, (seconds, peak)
    for fmt in ("csc", "coo"):
        assert np.array_equal(m.predict(X.asformat(fmt)), got), fmt
    assert np.array_equal(m.predict(X[:7]), got[:7])
    cli = cli_binary()
    if cli is None:
        return
    (tmp_path / "m.txt").write_text(model)
    with open(tmp_path / "x.svm", "w") as f:
        for r in range(n):
            a, b = X.indptr[r], X.indptr[r + 1]
            f.write("0 " + " ".join(f"{c}:{float(v)!r}" for c, v in zip(X.indices[a:b], X.data[a:b]) if v) + "\n")
    out = subprocess.run([cli, "score", "-m", str(tmp_path / "m.txt"), "-d", str(tmp_path / "x.svm"), "--quiet"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert np.array_equal(got, np.array([float(v) for v in out.stdout.split()]))


def test_sparse_sample_is_validated(lgb_file, test_rows):
    sp = pytest.importorskip("scipy.sparse")
    X = sp.csr_matrix(np.nan_to_num(test_rows))
    m = treescore.Model(model_file=lgb_file, sample=X, threads=1)
    assert m._sample.shape == (len(test_rows), N_FEATURES)
    X.indices[3] = -1
    with pytest.raises(treescore.Error, match="malformed"):
        treescore.Model(model_file=lgb_file, sample=X, threads=1)


def test_bad_sample_errors_name_the_sample(lgb_file, test_rows):
    """A sample that is not rows of numbers is refused with 'sample ...' (the messages said
    'X must be 2-D', naming an argument the caller never passed)."""
    with pytest.raises(treescore.Error, match=r"^sample must be 2-D"):
        treescore.Model(model_file=lgb_file, sample=test_rows[0], threads=1)
    with pytest.raises(TypeError, match=r"^sample must hold numbers"):
        treescore.Model(model_file=lgb_file, sample=np.array([["a"] * 8]), threads=1)
    X = pytest.importorskip("scipy.sparse").csr_matrix(np.nan_to_num(test_rows))
    X.indices[3] = -1
    with pytest.raises(treescore.Error, match=r"^sample: .*malformed") as e:
        treescore.Model(model_file=lgb_file, sample=X, threads=1)
    assert e.value.status.startswith("TS_ERR_")  # the status is kept


# ---- item 8: scorers per n_jobs -------------------------------------------------------------

def test_n_jobs_scorers_bounded(lgb_file, test_rows):
    m = treescore.Model(model_file=lgb_file, engine="naive", threads=1)
    ref = m.predict(test_rows)
    for n in range(2, 12):
        assert np.array_equal(m.predict(test_rows, n_jobs=n), ref)
    assert len(m._scorers) <= 4


# ---- items 13: counts out of range ------------------------------------------------------------

def test_counts_out_of_range_refused(lgb_file, test_rows):
    """threads, n_jobs and batch_hint past 2^32 wrapped (threads=2**32+1 gave 1 thread)."""
    for kw in (dict(threads=2**32 + 1), dict(threads=2**64), dict(batch_hint=2**32), dict(batch_hint=-5)):
        with pytest.raises(treescore.Error, match="out of range") as e:
            treescore.Model(model_file=lgb_file, **kw)
        assert e.value.status == "TS_ERR_INVALID_ARGUMENT"
    m = treescore.Model(model_file=lgb_file, engine="naive", threads=-1)
    assert m.threads == treescore._core.cpu_count()
    with pytest.raises(treescore.Error, match="out of range"):
        m.predict(test_rows, n_jobs=2**32)
    with pytest.raises(TypeError):
        m.predict(test_rows, n_jobs=1.5)
    with pytest.raises(treescore.Error, match="outside 0 to"):  # the C layer checks too
        m._core.scorer("naive", "auto", 2**32 + 1, 0)


# ---- item 13: every Error has a status --------------------------------------------------------

def test_every_error_has_a_status(lgb_model, lgb_file, test_rows):
    pd = pytest.importorskip("pandas")
    assert treescore.Error("made by hand").status == "TS_ERR_GENERIC"
    cases = [
        (lambda: lgb_model.predict(test_rows[0]), "TS_ERR_SHAPE"),
        (lambda: lgb_model.predict(pd.DataFrame(test_rows, columns=NAMES).drop(columns=["feat_a"])), "TS_ERR_SHAPE"),
        (lambda: lgb_model.predict(test_rows[:, :3]), "TS_ERR_SHAPE"),
        (lambda: treescore.Model(model_str=b"tree\n"), None),
    ]
    for call, status in cases:
        with pytest.raises(treescore.Error) as e:
            call()
        assert e.value.status.startswith("TS_ERR_") and (status is None or e.value.status == status)


def test_non_utf8_objective_is_an_error(lgb_file):
    text = lgb_file.read_bytes().replace(b"objective=binary", b"objective=bin\xffary")
    with pytest.raises(treescore.Error, match="not UTF-8") as e:
        treescore.Model(model_str=text)
    assert e.value.status == "TS_ERR_PARSE"


# ---- items 9, 10, 13 and issue 28 item 1: DataFrame names ------------------------------------

def _frame_data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    y = (X[:, 0] + 2 * X[:, 5] - X[:, 2] > 0).astype(float)
    return X, y


def test_xgboost_reversed_f_names(test_rows):
    """Issue 28 item 1: XGBoost trained on a DataFrame f0..f5 stores those names; the
    frame reversed was taken by position (f{i} counted as "no names"): wrong probabilities.
    XGBoost refuses that frame (feature_names mismatch); treescore puts it back in order."""
    xgb = pytest.importorskip("xgboost")
    pd = pytest.importorskip("pandas")
    X, y = _frame_data()
    cols = [f"f{i}" for i in range(6)]
    df = pd.DataFrame(X, columns=cols)
    b = xgb.train(dict(objective="binary:logistic", max_depth=3, nthread=1, seed=1), xgb.DMatrix(df, y), 10)
    assert b.feature_names == cols
    with pytest.raises(ValueError, match="feature_names mismatch"):
        b.predict(xgb.DMatrix(df[cols[::-1]]))
    ref = b.predict(xgb.DMatrix(df))
    for m in (treescore.Model.from_booster(b), treescore.Model(model_str=bytes(b.save_raw("ubj")))):
        assert m.feature_names == cols
        got = m.predict(df[cols[::-1]])
        assert np.allclose(got, ref, rtol=1e-5, atol=1e-7)
        assert np.array_equal(got, m.predict(X))
        with pytest.raises(treescore.Error, match="lacks 6 of the model's 6 features"):
            m.predict(df.rename(columns=lambda c: "x" + c))


def test_lightgbm_reversed_column_i_names():
    """LightGBM trained on an array stores Column_0..Column_5; a frame with those names
    reversed was taken by position. (LightGBM 4.7's own predict is positional here.)"""
    lgb = pytest.importorskip("lightgbm")
    pd = pytest.importorskip("pandas")
    X, y = _frame_data()
    b = lgb.train(dict(objective="binary", num_leaves=7, verbose=-1, num_threads=1, seed=1), lgb.Dataset(X, y), 10)
    cols = [f"Column_{i}" for i in range(6)]
    assert b.feature_name() == cols
    m = treescore.Model.from_booster(b)
    ref = b.predict(X)
    df = pd.DataFrame(X, columns=cols)
    assert np.array_equal(m.predict(df[cols[::-1]]), ref)
    assert np.array_equal(m.predict(pd.DataFrame(X)), ref)  # pandas' default labels: by position
    with pytest.raises(treescore.Error, match="to_numpy"):
        m.predict(pd.DataFrame(X, columns=list("abcdef")))


def test_int_labels_match_str_names():
    """A model trained on pd.DataFrame(array) stores "0".."5": int labels match them."""
    lgb = pytest.importorskip("lightgbm")
    pd = pytest.importorskip("pandas")
    X, y = _frame_data()
    b = lgb.train(dict(objective="binary", num_leaves=7, verbose=-1, num_threads=1), lgb.Dataset(pd.DataFrame(X), y), 8)
    assert b.feature_name() == [str(i) for i in range(6)]
    m = treescore.Model.from_booster(b)
    assert np.array_equal(m.predict(pd.DataFrame(X)[list(range(6))[::-1]]), b.predict(X))


def test_lightgbm_names_with_spaces():
    """LightGBM stores "my feat 0" as "my_feat_0": the training frame itself was refused."""
    lgb = pytest.importorskip("lightgbm")
    pd = pytest.importorskip("pandas")
    X, y = _frame_data()
    df = pd.DataFrame(X, columns=[f"my feat {i}" for i in range(6)])
    b = lgb.train(dict(objective="binary", num_leaves=7, verbose=-1, num_threads=1), lgb.Dataset(df, y), 8)
    assert b.feature_name()[0] == "my_feat_0"
    m = treescore.Model.from_booster(b)
    assert np.array_equal(m.predict(df), b.predict(df))
    assert np.array_equal(m.predict(df[df.columns[::-1]]), b.predict(df))


def test_duplicate_names_refused(lgb_model, test_rows):
    """Item 9: a name two columns share shifted the columns silently; item 13: duplicate
    categorical names raised AttributeError."""
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(np.hstack([test_rows[:, :1], test_rows]), columns=["feat_b"] + NAMES)
    with pytest.raises(treescore.Error, match="2 columns named 'feat_b'") as e:
        lgb_model.predict(df)
    assert e.value.status == "TS_ERR_SHAPE"
    # a duplicate the model does not use is one more ignored column
    df = pd.DataFrame(np.hstack([test_rows, test_rows[:, :2]]), columns=NAMES + ["other", "other"])
    assert np.array_equal(lgb_model.predict(df), lgb_model.predict(test_rows))
    cat = pd.DataFrame({"c": pd.Categorical(["a", "b"]), "d": [1.0, 2.0]})
    cat.columns = ["c", "c"]
    with pytest.raises(treescore.Error):
        lgb_model.predict(cat)


def test_mixed_labels_still_matched_by_name(lgb_model, test_rows):
    """Item 10: one non-string label turned name matching off: the named columns, in
    another order, were then taken by position."""
    pd = pytest.importorskip("pandas")
    ref = lgb_model.predict(test_rows)
    df = pd.DataFrame(test_rows[:, ::-1], columns=NAMES[::-1])
    df[0] = 1.0  # an extra column with an int label
    assert np.array_equal(lgb_model.predict(df), ref)


def test_extra_columns_anywhere(test_rows):
    """Item 13: where an extra column sat decided whether it shifted the others (model
    with Column_i names). Rule: a named frame's unused columns are ignored wherever they
    sit; a positional one's past the model's features."""
    lgb = pytest.importorskip("lightgbm")
    pd = pytest.importorskip("pandas")
    X, y = _frame_data()
    b = lgb.train(dict(objective="binary", num_leaves=7, verbose=-1, num_threads=1), lgb.Dataset(X, y), 8)
    m = treescore.Model.from_booster(b)
    ref = b.predict(X)
    df = pd.DataFrame(X, columns=[f"Column_{i}" for i in range(6)])
    for at in (0, 3, 6):
        d = df.copy()
        d.insert(at, "extra", 9.0)
        assert np.array_equal(m.predict(d), ref), at


def test_name_matching_on_every_path(tmp_path):
    """The audit of issue 28 item 1: pickled models, from_booster of the sklearn wrappers,
    model files and the planner's sample all match a named frame by name."""
    import pickle
    xgb = pytest.importorskip("xgboost")
    lgb = pytest.importorskip("lightgbm")
    pd = pytest.importorskip("pandas")
    X, y = _frame_data()
    cols = [f"f{i}" for i in range(6)]
    df = pd.DataFrame(X, columns=cols)
    rev = df[cols[::-1]]
    xclf = xgb.XGBClassifier(n_estimators=8, max_depth=3, n_jobs=1).fit(df, y)
    lclf = lgb.LGBMClassifier(n_estimators=8, num_leaves=7, verbose=-1, n_jobs=1).fit(df, y)
    path = tmp_path / "x.json"
    xclf.get_booster().save_model(str(path))
    for clf in (xclf, lclf):
        m = treescore.Model.from_booster(clf)
        ref = m.predict(X)
        assert np.array_equal(m.predict(rev), ref)
        assert np.array_equal(pickle.loads(pickle.dumps(m)).predict(rev), ref)
        s = treescore.Model.from_booster(clf, sample=rev, threads=1)
        assert np.array_equal(s._sample, X[:4096].astype(np.float32))
    assert np.array_equal(treescore.Model(model_file=path).predict(rev),
                          treescore.Model(model_file=path).predict(X))


def test_arrow_and_polars_frames_matched_by_name():
    """A pyarrow Table or polars DataFrame was read with np.asarray, by position, even when
    its named columns came in another order than the model's (XGBoost's and LightGBM's
    inplace predict do the same, scikit-learn refuses it): wrong scores where a pandas frame
    is matched by name. Such frames are now matched by name as pandas frames are; polars'
    default names column_0.. stay positional, as pandas' default labels."""
    pa = pytest.importorskip("pyarrow")
    pytest.importorskip("pandas")
    xgb = pytest.importorskip("xgboost")
    X, y = _frame_data()
    cols = [f"f{i}" for i in range(6)]
    b = xgb.train(dict(objective="binary:logistic", max_depth=3, nthread=1, seed=1),
                  xgb.DMatrix(X, y, feature_names=cols), 10)
    m = treescore.Model.from_booster(b)
    ref = m.predict(X)
    table = pa.table({c: X[:, i] for i, c in enumerate(cols)})
    assert np.array_equal(m.predict(table), ref)
    assert np.array_equal(m.predict(table.select(cols[::-1])), ref)
    with pytest.raises(treescore.Error, match="lacks 1 of the model's 6 features: 'f0'"):
        m.predict(table.drop_columns(["f0"]).append_column("g", pa.array(X[:, 0])))
    try:
        import polars as pl
    except ImportError:
        return
    frame = pl.DataFrame(X, schema=cols)
    assert np.array_equal(m.predict(frame.select(cols[::-1])), ref)
    assert np.array_equal(m.predict(pl.DataFrame(X)), ref)  # column_0..column_5: by position
    assert np.array_equal(m.predict(frame.select(cols[::-1]), raw_score=True), m.predict(X, raw_score=True))


def test_base_score_outside_the_logistic_range():
    """XGBoost refuses binary:logistic with base_score outside [0, 1] (1 and 0 it clamps,
    from 3.2); the C loader decides the link (src/io/model_xgboost.c). Only the refusal
    itself is checked here."""
    xgb = pytest.importorskip("xgboost")
    X, y = _frame_data(200)
    b = xgb.train(dict(objective="binary:logistic", max_depth=2, nthread=1), xgb.DMatrix(X, y), 2)
    j = json.loads(bytes(b.save_raw("json")))
    for bad in ("1.5", "-0.5", "[2]"):
        j["learner"]["learner_model_param"]["base_score"] = bad
        with pytest.raises(treescore.Error, match="outside") as e:
            treescore.Model(model_str=json.dumps(j))
        assert e.value.status == "TS_ERR_INVALID_MODEL"
    j["learner"]["learner_model_param"]["base_score"] = "0.25"
    treescore.Model(model_str=json.dumps(j))


def test_training_library_predict_arguments_refused(lgb_binary, lgb_model, test_rows):
    """LightGBM's Booster.predict takes (data, start_iteration, num_iteration, raw_score,
    ...): predict(X, 0, 10), meant as the first 10 iterations, was read as raw_score=0,
    n_jobs=10 and scored every tree, silently (0.30 off LightGBM's predict(X, 0, 10) on
    these rows); predict(X, 5) returned raw margins for a truthy 5. raw_score now takes
    True or False only and n_jobs is keyword-only. Keyword arguments of the training
    libraries (num_iteration, iteration_range, pred_leaf, output_margin, num_threads,
    ...) are refused naming what to do instead, not with Python's bare 'unexpected
    keyword argument'."""
    X = test_rows[:50]
    assert np.abs(lgb_model.predict(X) - lgb_binary.predict(X, 0, 10)).max() > 0.1  # what was scored
    for args in ((0, 10), (False, 10), (True, 1, 2)):
        with pytest.raises(TypeError, match="takes X and raw_score positionally.*no iteration range"):
            lgb_model.predict(X, *args)
    for arg in (5, 1, 0, "True", None):
        with pytest.raises(TypeError, match="raw_score must be True or False"):
            lgb_model.predict(X, arg)
    assert np.array_equal(lgb_model.predict(X, np.bool_(True)), lgb_model.predict(X, raw_score=True))
    assert np.array_equal(lgb_model.predict(X, False, n_jobs=1), lgb_binary.predict(X))
    hints = {"num_iteration": "every tree", "start_iteration": "every tree", "iteration_range": "every tree",
             "ntree_limit": "every tree", "pred_leaf": "scores only", "pred_contrib": "scores only",
             "output_margin": "raw_score=True", "num_threads": "n_jobs=", "nthread": "n_jobs=",
             "thread_count": "n_jobs=", "missing": "NaN", "validate_features": "by name",
             "prediction_type": "raw_score=True"}
    for name, hint in hints.items():
        with pytest.raises(TypeError, match=f"predict\\(\\) got an unexpected keyword argument '{name}'.*{hint}"):
            lgb_model.predict(X, **{name: 10})
    with pytest.raises(TypeError, match="unexpected keyword argument 'frobnicate'"):
        lgb_model.predict(X, frobnicate=1)


def test_integer_labels_in_another_order_matched_by_name():
    """A model trained on a frame whose integer labels were not in order (df[[2, 0, 1]]:
    feature names "2", "0", "1") scored a frame with the labels 0, 1, 2 by position,
    taking them for pandas' default labels: feature "2" read column 0, silently (XGBoost
    refuses the frame: its names differ in order). Labels 0..n-1 are positional only when
    the model's names are not integers in another order; here they are names, matched."""
    xgb = pytest.importorskip("xgboost")
    lgb = pytest.importorskip("lightgbm")
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(13)
    X = rng.normal(size=(400, 3))
    train = pd.DataFrame(X)[[2, 0, 1]]
    y = 3 * X[:, 2] + X[:, 0]
    xb = xgb.train({"max_depth": 3, "nthread": 1}, xgb.DMatrix(train, y), 10)
    lb = lgb.train(dict(objective="regression", num_leaves=7, verbose=-1, num_threads=1), lgb.Dataset(train, y), 10)
    test = pd.DataFrame(X[:60])  # labels 0, 1, 2
    for m, ref in ((treescore.Model.from_booster(xb, engine="naive", threads=1),
                    xb.predict(xgb.DMatrix(train.iloc[:60]))),
                   (treescore.Model.from_booster(lb, engine="naive", threads=1), lb.predict(train.iloc[:60]))):
        assert m.feature_names == ["2", "0", "1"]
        assert np.allclose(m.predict(test), ref, rtol=1e-6, atol=1e-6)
        assert np.array_equal(m.predict(test), m.predict(train.iloc[:60]))
        assert np.array_equal(m.predict(test.to_numpy()[:, [2, 0, 1]]), m.predict(test))  # arrays by position


def test_malformed_integer_sparse_named_for_xgboost(xgb_file):
    """An integer CSR matrix with a broken structure, given to an XGBoost model, reached
    scipy's astype(float32) (the one-step rounding of integer entries) before treescore's
    checks and failed with scipy's own ValueError ('index pointer should start with 0'),
    found by py_input_fuzz; it is refused as every malformed matrix is."""
    sp = pytest.importorskip("scipy.sparse")
    m = treescore.Model(model_file=xgb_file, engine="naive", threads=1)
    X = sp.csr_matrix((np.array([1, 2], dtype=np.int64), np.array([0, 1]), np.array([0, 1, 2])), shape=(2, N_FEATURES))
    X.indptr = np.array([1, 1, 2])
    with pytest.raises(treescore.Error, match="malformed sparse matrix: indptr starts at 1") as e:
        m.predict(X)
    assert e.value.status == "TS_ERR_INVALID_ARGUMENT"
    good = sp.csr_matrix(np.array([[3, 0, 2**24 + 1, 0, 0, 0, 0, 0]], dtype=np.int64))
    dense = good.toarray().astype(np.float32)
    dense[dense == 0] = np.nan  # absent entries are missing to XGBoost
    assert np.array_equal(m.predict(good), m.predict(dense))


@pytest.mark.parametrize("fmt", SPARSE_FORMATS)
def test_integer_sparse_rounded_once_every_format(fmt, xgb_file):
    """Integer entries past 2^53 given to an XGBoost model are rounded to float32 in one
    step in every sparse format (lil and dok hold Python ints), now that the rounding is
    done on the checked arrays rather than by scipy's astype before the checks."""
    sp = pytest.importorskip("scipy.sparse")
    m = treescore.Model(model_file=xgb_file, engine="naive", threads=1)
    v = 2**54 + 2**30 + 1  # one step: 2^54 + 2^31; through float64 first: 2^54
    D = np.zeros((2, N_FEATURES), dtype=np.int64)
    D[:, 1], D[1, 3] = v, -v
    S = sp.csr_matrix(D).asformat(fmt)
    want = np.where(D == 0, np.nan, D.astype(np.float32))
    one = np.array([v], dtype=np.int64).astype(np.float32)[0]
    assert one == np.float32(2.0**54 + 2.0**31) and np.float32(float(v)) == np.float32(2.0**54)
    assert np.array_equal(m.predict(S, raw_score=True), m.predict(want, raw_score=True))
