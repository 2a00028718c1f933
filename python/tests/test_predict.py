# test_predict.py: treescore.Model against LightGBM, XGBoost and the C CLI: loading three ways, transforms, every input kind.
from __future__ import annotations

import subprocess

import numpy as np
import pytest

import treescore
from conftest import MODELS, N_FEATURES, NAMES, cli_binary, make_data

ENGINES = ["naive", "qs", "vqs", "vpred", "block-naive", "block-vpred", "rapid", "trees-simd", "oblivious", "ifelse", "auto"]


def cli_scores(model_path, X: np.ndarray, tmp_path) -> np.ndarray:
    exe = cli_binary()
    if exe is None:
        pytest.skip("no treescore CLI built (set TS_BIN)")
    csv = tmp_path / "rows.csv"
    with open(csv, "w") as f:
        for row in X:
            f.write(",".join("" if np.isnan(v) else repr(float(v)) for v in row) + "\n")
    out = tmp_path / "scores.txt"
    subprocess.run([exe, "score", "-m", str(model_path), "-d", str(csv), "--no-header", "-o", str(out)],
                   check=True, capture_output=True, timeout=120)
    return np.array([float(t) for t in out.read_text().split()])


def test_version():
    assert treescore.__version__ == treescore._core.version
    assert treescore.__version__.count(".") == 2


def test_lightgbm_three_ways_bit_identical(lgb_binary, lgb_file, test_rows):
    ref_raw = lgb_binary.predict(test_rows, raw_score=True)
    ref = lgb_binary.predict(test_rows)
    for m in (treescore.Model(model_file=lgb_file), treescore.Model(model_file=str(lgb_file), model_format="lightgbm"),
              treescore.Model(model_str=lgb_file.read_text()), treescore.Model(model_str=lgb_file.read_bytes()),
              treescore.Model.from_booster(lgb_binary)):
        assert m.num_features == N_FEATURES and m.feature_names == NAMES
        assert m.num_trees == 40 and m.objective == "binary" and m.model_format == "lightgbm"
        assert np.array_equal(m.predict(test_rows, raw_score=True), ref_raw)
        assert np.array_equal(m.predict(test_rows), ref)  # LightGBM's sigmoid, in double
        assert np.array_equal(m.predict(test_rows.astype(np.float32)), lgb_binary.predict(test_rows.astype(np.float32)))


def test_lightgbm_sklearn_wrapper(data, test_rows):
    lgb = pytest.importorskip("lightgbm")
    X, y = data
    clf = lgb.LGBMClassifier(n_estimators=10, num_leaves=7, verbose=-1, n_jobs=1).fit(X, y)
    m = treescore.Model.from_booster(clf)
    assert np.array_equal(m.predict(test_rows), clf.predict_proba(test_rows)[:, 1])


def test_lightgbm_poisson_exp(lgb_poisson, test_rows):
    m = treescore.Model.from_booster(lgb_poisson)
    assert np.array_equal(m.predict(test_rows), lgb_poisson.predict(test_rows))
    assert np.array_equal(m.predict(test_rows, raw_score=True), lgb_poisson.predict(test_rows, raw_score=True))


def test_xgboost_json_and_booster(xgb_binary, xgb_file, test_rows):
    xgb = pytest.importorskip("xgboost")
    Xf = test_rows.astype(np.float32)
    margin = xgb_binary.predict(xgb.DMatrix(Xf), output_margin=True)
    prob = xgb_binary.predict(xgb.DMatrix(Xf))
    for m in (treescore.Model(model_file=xgb_file), treescore.Model.from_booster(xgb_binary)):
        assert m.objective == "binary:logistic"
        raw = m.predict(Xf, raw_score=True)
        # XGBoost adds in float32, treescore in double: within float32 rounding of the sum
        assert np.allclose(raw, margin, rtol=0, atol=1e-5)
        ours = m.predict(Xf)
        assert ours.dtype == np.float64
        assert np.allclose(ours, prob, rtol=1e-5, atol=1e-7)
        # the transform itself is XGBoost's float32 sigmoid, bit for bit on XGBoost's margin
        code, param, div = m._transform
        same = treescore._core.transform_values(list(margin.astype(np.float64)), 1, code, param, div)
        assert np.array_equal(np.array(same), prob.astype(np.float64))


def test_xgboost_sklearn_wrapper(data, test_rows):
    xgb = pytest.importorskip("xgboost")
    X, y = data
    clf = xgb.XGBClassifier(n_estimators=10, max_depth=3, n_jobs=1).fit(X, y)
    m = treescore.Model.from_booster(clf)
    assert np.allclose(m.predict(test_rows), clf.predict_proba(test_rows)[:, 1], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("path,fmt", [
    (MODELS / "lgb_small_lambdarank.txt", "auto"),
    (MODELS / "xgb_small_logistic.json", "auto"),
    (MODELS / "msn_lambdamart_10trees_quickrank.xml", "quickrank"),
])
def test_bit_identical_to_cli(path, fmt, tmp_path):
    m = treescore.Model(model_file=path, model_format=fmt)
    X = make_data(300, 7)
    X = np.hstack([X] * (m.num_features // N_FEATURES + 1))[:, :m.num_features]
    assert np.array_equal(m.predict(X, raw_score=True), cli_scores(path, X, tmp_path))


def test_quickrank_objective_is_identity():
    m = treescore.Model(model_file=MODELS / "msn_lambdamart_10trees_quickrank.xml")
    X = np.nan_to_num(make_data(50, 8))
    X = np.hstack([X] * (m.num_features // N_FEATURES + 1))[:, :m.num_features]
    assert m.model_format == "quickrank"
    assert np.array_equal(m.predict(X), m.predict(X, raw_score=True))


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_same_bits(lgb_file, test_rows, engine):
    ref = treescore.Model(model_file=lgb_file, engine="naive").predict(test_rows)
    m = treescore.Model(model_file=lgb_file, engine=engine, threads=2)
    assert engine == "auto" or m.engine == engine
    assert np.array_equal(m.predict(test_rows), ref)
    assert np.array_equal(m.predict(test_rows, n_jobs=1), ref)


def test_options_and_reports(lgb_file):
    m = treescore.Model(model_file=lgb_file, engine="vqs", isa="scalar", threads=1)
    assert m.engine == "vqs" and m.isa == "scalar" and m.threads == 1
    assert "engine requested" in m.plan_report()
    auto = treescore.Model(model_file=lgb_file)
    assert auto.engine != "auto" and auto.plan_report()
    assert "lightgbm" in repr(auto) and auto.info()["n_leaves"] > 0
    # an unknown engine's message lists every engine (it had stopped at rapid)
    with pytest.raises(treescore.Error, match="unknown engine 'fast'.*trees-simd.*oblivious.*deep"):
        treescore.Model(model_file=lgb_file, engine="fast")


# ---- input kinds ----------------------------------------------------------------------

def test_dense_inputs(lgb_binary, lgb_file, test_rows):
    m = treescore.Model(model_file=lgb_file, engine="vqs")
    ref = lgb_binary.predict(test_rows)
    assert np.array_equal(m.predict(np.asfortranarray(test_rows)), ref)
    assert np.array_equal(m.predict(test_rows.tolist()), ref)
    # a strided view (every other row) is scored in place, like a C-ordered array
    assert np.array_equal(m.predict(test_rows[::2]), ref[::2])
    # extra columns past the model's are ignored, as by the C library
    wide = np.hstack([test_rows, np.ones((len(test_rows), 3))])
    assert np.array_equal(m.predict(wide), ref)
    ro = test_rows.copy()
    ro.setflags(write=False)
    assert np.array_equal(m.predict(ro), ref)
    ints = np.nan_to_num(test_rows * 3).astype(np.int32)
    assert np.array_equal(m.predict(ints), lgb_binary.predict(ints))
    assert np.array_equal(m.predict(ints.astype(np.int8)), m.predict(ints.astype(np.float64)))
    assert np.array_equal(m.predict(ints > 0), m.predict((ints > 0).astype(np.float64)))
    f16 = test_rows.astype(np.float16)
    assert np.array_equal(m.predict(f16), m.predict(f16.astype(np.float32)))
    big_endian = test_rows.astype(">f8")
    assert np.array_equal(m.predict(big_endian), ref)
    assert m.predict(np.empty((0, N_FEATURES))).shape == (0,)
    assert m.predict(test_rows[:1]).shape == (1,)


def test_lightgbm_other_dtypes_read_as_float32():
    """LightGBM's Booster.predict converts a numpy array (or list) of any dtype but float32
    and float64 to float32 before scoring; treescore converted it to float64, so int64
    values past 2^24 (timestamps, ids, counts) went down other branches than LightGBM's:
    1,730 of 5,000 rows differed on this model. They are now converted to float32 as
    LightGBM does; DataFrames (LightGBM: float64 for int64 columns) are unchanged."""
    lgb = pytest.importorskip("lightgbm")
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    X = rng.integers(1_600_000_000, 1_600_010_000, size=(2000, 3))
    y = (X[:, 0] % 7).astype(np.float64) + (X[:, 1] > 1_600_005_000)
    b = lgb.train(dict(objective="regression", num_leaves=31, max_bin=1023, verbose=-1, num_threads=1),
                  lgb.Dataset(X.astype(np.float64), y), 20)
    m = treescore.Model.from_booster(b, engine="naive", threads=1)
    for Xd in (X, X.astype(np.uint32), X.astype(np.uint64), X.astype(object), X.astype(np.longdouble)):
        want = b.predict(Xd, raw_score=True)
        assert not np.array_equal(want, b.predict(X.astype(np.float64), raw_score=True))  # the case is real
        assert np.array_equal(m.predict(Xd, raw_score=True), want), Xd.dtype
    assert np.array_equal(m.predict(X[:50].tolist(), raw_score=True), b.predict(X[:50].tolist(), raw_score=True))
    df = pd.DataFrame(X, columns=[f"Column_{i}" for i in range(3)])
    assert np.array_equal(m.predict(df, raw_score=True), b.predict(df, raw_score=True))
    # other libraries' frames: LightGBM reads them through Arrow, as doubles
    pa = pytest.importorskip("pyarrow")
    table = pa.table({f"Column_{i}": X[:, i] for i in range(3)})
    assert np.array_equal(m.predict(table, raw_score=True), b.predict(table, raw_score=True))
    # XGBoost reads every input as float32 (so does treescore's float64 path for it): unchanged
    xgb = pytest.importorskip("xgboost")
    xb = xgb.train(dict(max_depth=4, nthread=1), xgb.DMatrix(X.astype(np.float32), y), 10)
    mx = treescore.Model.from_booster(xb, engine="naive", threads=1)
    assert np.array_equal(mx.predict(X, raw_score=True), mx.predict(X.astype(np.float32), raw_score=True))


def test_pandas_dataframe(lgb_binary, lgb_file, test_rows):
    pd = pytest.importorskip("pandas")
    m = treescore.Model(model_file=lgb_file)
    ref = lgb_binary.predict(test_rows)
    df = pd.DataFrame(test_rows, columns=NAMES)
    assert np.array_equal(m.predict(df), ref)
    # reordered and extra columns are put back in the model's order by name
    shuffled = df[NAMES[::-1]].assign(extra=1.0)
    assert np.array_equal(m.predict(shuffled), ref)
    # nullable dtypes: <NA> is missing
    nullable = df.astype("Float64")
    assert nullable.isna().any().any()
    assert np.array_equal(m.predict(nullable), ref)
    ints = pd.DataFrame(np.nan_to_num(test_rows * 3).astype(np.int64), columns=NAMES).astype("Int64")
    ints.iloc[0, 0] = pd.NA
    expect = ints.to_numpy(dtype=np.float64, na_value=np.nan)
    assert np.array_equal(m.predict(ints), lgb_binary.predict(expect))
    # unnamed (integer) columns are taken by position
    assert np.array_equal(m.predict(pd.DataFrame(test_rows)), ref)
    with pytest.raises(treescore.Error, match="lacks 2 of the model's 8 features: 'feat_a', 'feat_c'"):
        m.predict(df.drop(columns=["feat_a", "feat_c"]))
    with pytest.raises(TypeError):
        m.predict(df.assign(feat_b="text"))


def test_scipy_sparse_lightgbm_absent_is_zero(lgb_binary, lgb_file, test_rows):
    sp = pytest.importorskip("scipy.sparse")
    m = treescore.Model(model_file=lgb_file)
    X = np.where(np.isnan(test_rows), 0.0, test_rows)
    X[np.abs(X) < 0.5] = 0.0
    csr = sp.csr_matrix(X)
    assert csr.nnz < X.size
    assert np.array_equal(m.predict(csr), lgb_binary.predict(csr))
    assert np.array_equal(m.predict(csr), lgb_binary.predict(X))
    assert np.array_equal(m.predict(csr.tocsc()), m.predict(csr))
    # fewer columns than the model reads: the missing ones are absent
    narrow = sp.csr_matrix(X[:, :5])
    assert np.array_equal(m.predict(narrow), m.predict(np.hstack([X[:, :5], np.zeros((len(X), 3))])))


def test_scipy_sparse_xgboost_absent_is_missing(xgb_binary, xgb_file, test_rows):
    sp = pytest.importorskip("scipy.sparse")
    xgb = pytest.importorskip("xgboost")
    m = treescore.Model(model_file=xgb_file)
    X = np.where(np.isnan(test_rows), 0.0, test_rows).astype(np.float32)
    X[np.abs(X) < 0.5] = 0.0
    csr = sp.csr_matrix(X)
    dense_missing = np.where(X == 0.0, np.nan, X)
    assert np.array_equal(m.predict(csr, raw_score=True), m.predict(dense_missing, raw_score=True))
    ref = xgb_binary.predict(xgb.DMatrix(csr), output_margin=True)
    assert np.allclose(m.predict(csr, raw_score=True), ref, rtol=0, atol=1e-5)


# ---- errors ---------------------------------------------------------------------------

def test_errors(lgb_file, test_rows):
    m = treescore.Model(model_file=lgb_file)
    assert issubclass(treescore.Error, ValueError)
    with pytest.raises(treescore.Error, match=r"5 columns.*8") as e:
        m.predict(test_rows[:, :5])
    assert e.value.status == "TS_ERR_SHAPE"
    with pytest.raises(treescore.Error, match="2-D"):
        m.predict(test_rows[0])
    with pytest.raises(TypeError):
        m.predict([["a", "b"]])
    with pytest.raises(TypeError):
        m.predict(np.array([["a"] * N_FEATURES]))
    with pytest.raises(TypeError):
        m.predict(np.zeros((2, N_FEATURES), dtype=np.complex128))
    with pytest.raises(TypeError):
        m.predict([[1.0, 2.0], [3.0]])
    with pytest.raises(TypeError):
        treescore.Model()
    with pytest.raises(TypeError):
        treescore.Model(model_str=12)
    with pytest.raises(FileNotFoundError):
        treescore.Model(model_file="/nonexistent/model.txt")
    with pytest.raises(treescore.Error, match="engine"):
        treescore.Model(model_file=lgb_file, engine="warp")
    with pytest.raises(treescore.Error, match="isa"):
        treescore.Model(model_file=lgb_file, isa="mmx")
    with pytest.raises(treescore.Error, match="model_format"):
        treescore.Model(model_file=lgb_file, model_format="pmml")
    with pytest.raises(TypeError):
        treescore.Model.from_booster(object())
    # a live model object passed as the file name: "expected str, bytes or os.PathLike
    # object, not Booster" did not say where such an object goes
    import lightgbm as lgb
    with pytest.raises(TypeError, match=r"from_booster"):
        treescore.Model(lgb.Booster(model_file=str(lgb_file)))
    with pytest.raises(TypeError, match=r"from_sklearn"):
        treescore.Model(object())


def test_bad_models_never_crash(lgb_file, xgb_file):
    texts = [lgb_file.read_bytes(), xgb_file.read_bytes(), (MODELS / "rankeval_quickrank.model.xml").read_bytes()]
    for text in texts:
        for cut in sorted({1, 7, 50, len(text) // 3, len(text) // 2, len(text) - 10, len(text) - 1}):
            try:
                m = treescore.Model(model_str=text[:cut], engine="naive")
            except treescore.Error as e:
                assert str(e) and e.status.startswith("TS_ERR_")
            else:  # a prefix that is still a whole model (trailing bytes cut) must score
                m.predict(np.zeros((2, m.num_features)))
    for junk in (b"", b"\0\0\0", b"tree\n", b"{", b"<ensemble>", "é".encode() * 9, bytes(range(256))):
        with pytest.raises(treescore.Error):
            treescore.Model(model_str=junk)


# ---- multiclass (K outputs per row): runs once the C library loads such models ----------

def _load_or_skip(**kw):
    try:
        return treescore.Model(**kw)
    except treescore.Error as e:
        if e.status == "TS_ERR_UNSUPPORTED":
            pytest.skip(f"multiclass models not loaded yet: {e}")
        raise


@pytest.mark.parametrize("objective", ["multiclass", "multiclassova"])
def test_lightgbm_multiclass(data, test_rows, objective):
    lgb = pytest.importorskip("lightgbm")
    X, _ = data
    y = np.digitize(np.nan_to_num(X[:, 0]), [-0.5, 0.5])
    b = lgb.train(dict(objective=objective, num_class=3, num_leaves=7, verbose=-1, num_threads=1), lgb.Dataset(X, y), 10)
    m = _load_or_skip(model_str=b.model_to_string())
    assert m.num_outputs == 3
    raw = m.predict(test_rows, raw_score=True)
    assert raw.shape == (len(test_rows), 3)
    assert np.array_equal(raw, b.predict(test_rows, raw_score=True))
    assert np.array_equal(m.predict(test_rows), b.predict(test_rows))


@pytest.mark.parametrize("objective", ["multi:softprob", "multi:softmax"])
def test_xgboost_multiclass(data, test_rows, objective):
    xgb = pytest.importorskip("xgboost")
    X, _ = data
    y = np.digitize(np.nan_to_num(X[:, 0]), [-0.5, 0.5])
    b = xgb.train(dict(objective=objective, num_class=3, max_depth=3, nthread=1), xgb.DMatrix(X, y), 10)
    m = _load_or_skip(model_str=bytes(b.save_raw("json")))
    assert m.num_outputs == 3
    Xf = test_rows.astype(np.float32)
    margin = b.predict(xgb.DMatrix(Xf), output_margin=True)
    raw = m.predict(Xf, raw_score=True)
    assert raw.shape == margin.shape == (len(Xf), 3)
    assert np.allclose(raw, margin, rtol=0, atol=1e-5)
    ref = b.predict(xgb.DMatrix(Xf))
    code, param, div = m._transform
    same = treescore._core.transform_values(list(margin.astype(np.float64).ravel()), 3, code, param, div)
    assert np.array_equal(np.array(same), ref.astype(np.float64).ravel())
    ours = m.predict(Xf)
    assert ours.shape == ref.shape
    if objective == "multi:softprob":
        assert np.allclose(ours, ref, rtol=1e-5, atol=1e-7)
    else:
        assert np.mean(ours == ref) > 0.99


def test_lightgbm_random_forest_average_output(data, test_rows):
    lgb = pytest.importorskip("lightgbm")
    X, y = data
    b = lgb.train(dict(objective="binary", boosting="rf", bagging_fraction=0.7, bagging_freq=1, num_leaves=7,
                       verbose=-1, num_threads=1), lgb.Dataset(X, y), 12)
    m = treescore.Model.from_booster(b)
    assert m.info()["average_output"] == 1
    assert np.array_equal(m.predict(test_rows, raw_score=True), b.predict(test_rows, raw_score=True))
    assert np.array_equal(m.predict(test_rows), b.predict(test_rows))


def test_every_prefix_of_a_model_string(xgb_file):
    """Truncated model strings (every 7th prefix of three small models) raise treescore.Error."""
    for path in (MODELS / "lgb_small_lambdarank.txt", MODELS / "rankeval_quickrank.model.xml", xgb_file):
        text = path.read_bytes()
        loaded = 0
        for cut in range(0, len(text), 7):
            try:
                m = treescore.Model(model_str=text[:cut], engine="naive", threads=1)
            except treescore.Error:
                continue
            loaded += 1
            assert m.predict(np.zeros((1, m.num_features))).shape[0] == 1
        assert loaded < len(text) // 7


def test_planner_sample_and_batch_hint(lgb_file, test_rows):
    ref = treescore.Model(model_file=lgb_file, engine="naive").predict(test_rows)
    pd = pytest.importorskip("pandas")
    sp = pytest.importorskip("scipy.sparse")
    for sample in (test_rows, test_rows.astype(np.float32), test_rows.tolist(),
                   pd.DataFrame(test_rows, columns=NAMES), sp.csr_matrix(np.nan_to_num(test_rows))):
        m = treescore.Model(model_file=lgb_file, sample=sample, batch_hint=100, threads=1)
        assert "100" in m.plan_report() or "wisdom" in m.plan_report()
        assert np.array_equal(m.predict(test_rows), ref)
        assert np.array_equal(m.predict(test_rows, n_jobs=2), ref)
    with pytest.raises(treescore.Error, match="5 columns.*8|columns"):
        treescore.Model(model_file=lgb_file, sample=test_rows[:, :5])


def test_lightgbm_pandas_categorical(test_rows):
    """A categorical DataFrame column is read as LightGBM reads it: categories set to the
    training ones (pandas_categorical of the model), then the codes; unseen values missing."""
    lgb = pytest.importorskip("lightgbm")
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(5)
    n = 1200
    colors = np.array(["red", "green", "blue", "black"])
    train = pd.DataFrame({"x": rng.normal(size=n), "color": pd.Categorical(colors[rng.integers(0, 4, n)])})
    y = train["x"] + (train["color"] == "green") * 2.0 + rng.normal(size=n) * 0.1
    b = lgb.train(dict(objective="regression", num_leaves=7, verbose=-1, num_threads=1, min_data_per_group=5,
                       cat_smooth=1), lgb.Dataset(train, y), 15)
    m = _load_or_skip(model_str=b.model_to_string())
    assert m.info()["n_categorical_splits"] > 0
    # other category order and an unseen category at predict time
    test = pd.DataFrame({"x": rng.normal(size=300),
                         "color": pd.Categorical(np.append(colors[rng.integers(0, 4, 299)], "pink"),
                                                 categories=["pink", "black", "blue", "green", "red"])})
    assert np.array_equal(m.predict(test), b.predict(test))


def test_bad_objective_parameter(lgb_file):
    text = lgb_file.read_text()
    assert "objective=binary sigmoid:1" in text
    for bad in ("sigmoid:abc", "sigmoid:-1", "sigmoid:nan"):
        with pytest.raises(treescore.Error, match="sigmoid"):
            treescore.Model(model_str=text.replace("sigmoid:1", bad), engine="naive")
    m = treescore.Model(model_str=text.replace("sigmoid:1", "sigmoid:0.5"), engine="naive")
    assert m._transform[1] == 0.5


def test_xgboost_pandas_categories_recoded(tmp_path):
    """An XGBoost model trained on a categorical DataFrame (3.1+ stores the training
    categories in its JSON, ``cats``) reads a DataFrame's categories by value, as XGBoost
    re-codes them: another category order or a subset of the categories scores as XGBoost
    does (it used to take the pandas codes as they were: silently wrong scores), and a
    category never seen in training is refused, as XGBoost refuses it."""
    xgb = pytest.importorskip("xgboost")
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(6)
    n = 600
    df = pd.DataFrame({"a": rng.normal(size=n),
                       "c": pd.Categorical(rng.choice(list("pqrstuvw"), n), categories=list("sqrpwvut")),
                       "i": pd.Categorical(rng.choice([10, 3, 7], n))})
    y = df.a + df.c.isin(["p", "q", "w"]) * 2 + (df.i == 7)
    b = xgb.train({"max_depth": 4, "nthread": 1}, xgb.DMatrix(df, y, enable_categorical=True), 10)
    if "cats" not in b.save_raw("json").decode():
        pytest.skip("this XGBoost does not store its training categories")
    reordered = df.assign(c=df.c.cat.reorder_categories(list("wvutsrqp")), i=df.i.cat.reorder_categories([10, 7, 3]))
    subset = df.iloc[:50].assign(c=pd.Categorical(df.c.iloc[:50].astype(str)))
    unseen = df.assign(c=pd.Categorical(["p"] * (n - 1) + ["nope"]))
    ubj = tmp_path / "cat.ubj"
    b.save_model(str(ubj))  # UBJSON: the same categories, read by the package's UBJSON reader
    for m in (treescore.Model.from_booster(b), treescore.Model(model_file=str(ubj))):
        for d in (df, reordered, subset):
            ref = b.predict(xgb.DMatrix(d, enable_categorical=True), output_margin=True)
            assert np.all(np.abs(m.predict(d) - ref) <= 1e-5 * np.maximum(1, np.abs(ref)))
        assert np.array_equal(m.predict(reordered), m.predict(df))
        with pytest.raises(treescore.Error, match="'nope' was not seen in training"):
            m.predict(unseen)
    assert treescore.Model(model_file=str(ubj)).model_format == "xgboost-ubjson"


def test_ubjson_reader_refuses_damage(tmp_path):
    """The package's UBJSON reader (XGBoost's categories, above) on every prefix of a real
    model and on flipped bytes: a value or ValueError, never another exception or a hang."""
    from treescore import _inputs
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(7)
    b = xgb.train({"max_depth": 2, "nthread": 1}, xgb.DMatrix(rng.normal(size=(60, 3)), rng.normal(size=60)), 2)
    data = bytes(b.save_raw("ubj"))
    assert _inputs.ubjson_loads(data)["learner"]["gradient_booster"]["model"]["gbtree_model_param"]["num_trees"] == "2"
    damaged = [data[:k] for k in range(0, len(data), 7)]
    damaged += [data[:k] + bytes([data[k] ^ 0x5A]) + data[k + 1:] for k in range(0, len(data), 11)]
    damaged += [b"[$L#L" + (2**62).to_bytes(8, "big"), b"[" * 100 + b"]" * 100, b"{L" + (2**40).to_bytes(8, "big")]
    for d in damaged:
        try:
            _inputs.ubjson_loads(d)
        except ValueError:
            pass


def _xgb_close(ours, ref):
    """Within XGBoost's float32 rounding of its sum (the models below: a few trees, |score| < 10)."""
    return np.all(np.abs(np.asarray(ours) - ref) <= 2e-6 * np.maximum(1, np.abs(ref)))


@pytest.mark.parametrize("kind", ["regressor", "classifier"])
def test_xgboost_sklearn_early_stopping_best_iteration(data, test_rows, kind):
    """An XGBRegressor / XGBClassifier fitted with early stopping predicts with its first
    best_iteration + 1 rounds (XGBModel.predict's iteration_range); from_booster took every
    round the booster kept (best + early_stopping_rounds), silently other scores (up to
    0.26 off on this regressor, 0.24 on this classifier's probabilities)."""
    xgb = pytest.importorskip("xgboost")
    X, y = data
    target = y if kind == "classifier" else np.nan_to_num(X[:, 0]) * 2 + y
    cls = xgb.XGBClassifier if kind == "classifier" else xgb.XGBRegressor
    est = cls(n_estimators=200, learning_rate=0.5, max_depth=4, early_stopping_rounds=3, n_jobs=1)
    est.fit(X[:700], target[:700], eval_set=[(X[700:], target[700:])], verbose=False)
    assert est.best_iteration + 1 < est.get_booster().num_boosted_rounds()
    ref = est.predict_proba(test_rows)[:, 1] if kind == "classifier" else est.predict(test_rows)
    assert _xgb_close(treescore.Model.from_booster(est).predict(test_rows), ref)
    # the Booster itself predicts with every round: from_booster(Booster) keeps them all
    b = est.get_booster()
    assert _xgb_close(treescore.Model.from_booster(b).predict(test_rows), b.predict(xgb.DMatrix(test_rows)))
    # gblinear cannot be cut to its best rounds: refused by name, as gblinear always is
    lin = xgb.XGBRegressor(booster="gblinear", n_estimators=200, learning_rate=0.5, early_stopping_rounds=2, n_jobs=1)
    lin.fit(np.nan_to_num(X[:700]), target[:700], eval_set=[(np.nan_to_num(X[700:]), target[700:])], verbose=False)
    if lin.best_iteration + 1 < lin.get_booster().num_boosted_rounds():
        with pytest.raises(treescore.Error, match="gblinear"):
            treescore.Model.from_booster(lin)


@pytest.mark.parametrize("missing", [0.0, -1.0, 0.1])
def test_xgboost_sklearn_missing_value(data, test_rows, missing):
    """XGBRegressor(missing=m) treats m as missing (XGBoost compares the float32 value with
    float32(m)), in fitting and in predict; from_booster scored m as a number: silently other
    scores (up to 0.41 off with missing=0, 2.7 with missing=-1 on these rows). The Model now marks those values missing, on every input
    kind, and keeps doing so when pickled."""
    import pickle
    xgb = pytest.importorskip("xgboost")
    sp = pytest.importorskip("scipy.sparse")
    pd = pytest.importorskip("pandas")
    X, y = data
    rng = np.random.default_rng(8)
    Xm = np.where(rng.random(X.shape) < 0.3, missing, X)
    T = np.where(rng.random(test_rows.shape) < 0.3, missing, test_rows)
    T[:5, 0] = np.float64(np.float32(missing))  # the float32 of m is m to XGBoost
    reg = xgb.XGBRegressor(n_estimators=10, max_depth=3, missing=missing, n_jobs=1)
    reg.fit(Xm, np.nan_to_num(X[:, 0]) * 2 + y)
    ref = reg.predict(T)
    m = treescore.Model.from_booster(reg)
    assert _xgb_close(m.predict(T), ref)
    assert _xgb_close(m.predict(T.astype(np.float32)), reg.predict(T.astype(np.float32)))
    assert _xgb_close(m.predict(T.tolist()), ref)
    assert _xgb_close(m.predict(pd.DataFrame(T)), ref)
    assert _xgb_close(m.predict(sp.csr_matrix(np.nan_to_num(T, nan=0.0))), reg.predict(sp.csr_matrix(np.nan_to_num(T, nan=0.0))))
    assert _xgb_close(pickle.loads(pickle.dumps(m)).predict(T), ref)
    assert _xgb_close(m.predict(T, raw_score=True), reg.predict(T, output_margin=True))
    assert not np.array_equal(treescore.Model.from_booster(reg.get_booster()).predict(T), m.predict(T))


@pytest.mark.parametrize("objective", ["regression", "regression_l1", "fair", "quantile", "mape", "huber"])
def test_lightgbm_reg_sqrt_every_regression_objective(data, test_rows, objective):
    """reg_sqrt=True: LightGBM fits sqrt(label) and its predict squares the raw score back,
    sign(x) * x * x, for every objective derived from its L2 regression (the model file
    says "objective=regression_l1 sqrt", "fair sqrt", "quantile sqrt", "mape sqrt"; huber
    ignores reg_sqrt). Only "regression sqrt" was squared: the others returned the raw
    score, silently (here 2.16 against LightGBM's 4.67 for quantile, 1.49 against 2.23 for
    regression_l1)."""
    lgb = pytest.importorskip("lightgbm")
    X, y = data
    target = np.abs(np.nan_to_num(X[:, 0]) * 2 + y) + 0.1
    b = lgb.train(dict(objective=objective, reg_sqrt=True, num_leaves=7, verbose=-1, num_threads=1, seed=1),
                  lgb.Dataset(X, target), 5)
    m = treescore.Model.from_booster(b)
    assert np.array_equal(m.predict(test_rows), b.predict(test_rows))
    assert np.array_equal(m.predict(test_rows, raw_score=True), b.predict(test_rows, raw_score=True))


def test_lightgbm_cvbooster_refused(data):
    """lgb.cv(return_cvbooster=True)'s CVBooster holds one booster per fold (its
    model_to_string is JSON of them all): refused by name, not with a parse error about a
    truncated header; each fold's booster loads."""
    lgb = pytest.importorskip("lightgbm")
    X, y = data
    cv = lgb.cv(dict(objective="binary", num_leaves=7, verbose=-1, num_threads=1), lgb.Dataset(X, y), 3, nfold=2,
                return_cvbooster=True)["cvbooster"]
    with pytest.raises(TypeError, match="CVBooster.*boosters"):
        treescore.Model.from_booster(cv)
    b = cv.boosters[0]
    assert np.array_equal(treescore.Model.from_booster(b).predict(X), b.predict(X))


def test_xgboost_sigmoid_clamp(data, test_rows, tmp_path):
    """XGBoost's float sigmoid (common::Sigmoid) clamps the exponent, expf(min(-x, 88.7f)),
    so a margin below -88.7 gives 1 / expf(88.7f) = 3.0e-39, not 0; treescore gave 0
    (100% off, in the denormals). Now XGBoost's formula: the transform of XGBoost's own
    margins equals its probabilities bit for bit, at every margin."""
    import json
    xgb = pytest.importorskip("xgboost")
    X, y = data
    b = xgb.train({"objective": "binary:logistic", "max_depth": 3, "nthread": 1}, xgb.DMatrix(X, y), 3)
    doc = json.loads(b.save_raw("json"))
    leaves = []
    for k, tree in enumerate(doc["learner"]["gradient_booster"]["model"]["trees"]):
        for i, left in enumerate(tree["left_children"]):
            if left == -1:
                leaves.append((k, i))
    for n, (k, i) in enumerate(leaves):  # margins from about -120 to +40
        tree = doc["learner"]["gradient_booster"]["model"]["trees"][k]
        tree["split_conditions"][i] = tree["base_weights"][i] = -40.0 + 53.0 * (n % 3) - 0.37 * n
    path = tmp_path / "extreme.json"
    path.write_text(json.dumps(doc))
    b = xgb.Booster(model_file=str(path))
    margin = b.predict(xgb.DMatrix(test_rows), output_margin=True)
    prob = b.predict(xgb.DMatrix(test_rows))
    assert (margin < -88.7).any() and (margin > -80).any()
    m = treescore.Model(model_file=path)
    code, param, div = m._transform
    same = np.array(treescore._core.transform_values(list(margin.astype(np.float64)), 1, code, param, div))
    assert np.array_equal(same, prob.astype(np.float64))
    low = margin < -88.7
    assert np.array_equal(m.predict(test_rows)[low], prob[low].astype(np.float64))


def test_categorical_feature_given_as_plain_numbers_refused(tmp_path):
    """A model trained on a pandas categorical column (LightGBM's pandas_categorical,
    XGBoost 3.1+'s cats) scored a DataFrame holding that column as plain numbers (its
    integer category values 10, 20, 30, 40 rather than a Categorical) by reading each
    number as a category code: 10 is no code, so every row took the unseen-category
    branch, silently (LightGBM's predict of the same values as a Categorical differs by
    up to 1.65 here). LightGBM refuses such a frame ('train and valid dataset
    categorical_feature do not match'), and so does XGBoost; so does treescore now, naming
    the column, also where another column is categorical in its place (LightGBM counts
    them only, and sets the training categories on the wrong column). A numpy array still holds the codes (as for both libraries)."""
    lgb = pytest.importorskip("lightgbm")
    xgb = pytest.importorskip("xgboost")
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(12)
    n = 800
    df = pd.DataFrame({"x": rng.normal(size=n), "c": pd.Categorical(rng.choice([10, 20, 30, 40], n))})
    y = df["x"] + (df["c"] == 20) * 2.0 + (df["c"] == 40) * 1.0
    lb = lgb.train(dict(objective="regression", num_leaves=7, verbose=-1, num_threads=1, min_data_per_group=5,
                        cat_smooth=1), lgb.Dataset(df, y), 15)
    xb = xgb.train({"max_depth": 3, "nthread": 1}, xgb.DMatrix(df, y, enable_categorical=True), 10)
    plain = df.iloc[:100].assign(c=df["c"].iloc[:100].astype(np.int64))  # the values, not a Categorical
    models = [treescore.Model.from_booster(lb, engine="naive", threads=1)]
    if "cats" in xb.save_raw("json").decode():
        models.append(treescore.Model.from_booster(xb, engine="naive", threads=1))
    for m in models:
        assert np.array_equal(m.predict(df.iloc[:100]), m.predict(df.iloc[:100]))  # a Categorical: fine
        with pytest.raises(treescore.Error, match="column 'c' is not categorical") as e:
            m.predict(plain)
        assert e.value.status == "TS_ERR_SHAPE"
        swapped = plain.assign(x=pd.Categorical(plain["x"].round(1)))  # as many categoricals, the wrong one
        with pytest.raises(treescore.Error, match="column 'c' is not categorical"):
            m.predict(swapped)
        codes = df.iloc[:100].assign(c=df["c"].iloc[:100].cat.codes).to_numpy()
        assert np.array_equal(m.predict(codes), m.predict(df.iloc[:100]))  # arrays hold codes
    assert np.abs(lb.predict(df.iloc[:100]) - lb.predict(plain.to_numpy())).max() > 0.5  # what was scored
