# test_sklearn.py: treescore.Model.from_sklearn against scikit-learn's own predict / predict_proba / decision_function, every estimator, every engine.
"""Real estimators fitted here (small: the whole file takes seconds), scored on rows with
NaN (where the estimator takes it), values exactly on the trees' thresholds and the next
float32 and float64 up and down, as float32 and float64 arrays, by every engine; the
outputs must equal scikit-learn's bit for bit (the bar of the issue is 1e-12 relative;
treescore computes what scikit-learn computes, in the same order, so it is exact)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import treescore

sklearn = pytest.importorskip("sklearn")
from sklearn import ensemble, tree  # noqa: E402

ENGINES = ["naive", "qs", "vqs", "vpred", "block-naive", "block-vpred", "rapid", "trees-simd", "oblivious", "deep", "auto"]
N_FEATURES = 6


def make_xy(n: int, seed: int, nan: bool):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, N_FEATURES))
    X[:, 2] = np.round(X[:, 2] * 4) / 4  # repeated values: thresholds at midpoints
    X[:, 3] = rng.integers(0, 5, size=n)
    if nan:
        X[rng.random(X.shape) < 0.08] = np.nan
    z = np.nan_to_num(X)
    y = z[:, 0] + 0.5 * z[:, 1] * z[:, 2] + 0.3 * z[:, 3] + rng.normal(size=n) * 0.2
    return X, y


def thresholds(est):
    """(feature, threshold) of every split of the estimator's trees (original columns)."""
    out = []
    if hasattr(est, "_predictors"):
        from treescore._sklearn import _hgb_categories
        col_map = _hgb_categories(est)[1]  # the model's columns (categorical first) -> X's
        for it in est._predictors:
            for p in it:
                nd = p.nodes[(p.nodes["is_leaf"] == 0) & (p.nodes["is_categorical"] == 0)]
                out += list(zip(col_map[nd["feature_idx"]].tolist(), nd["num_threshold"].tolist()))
        return out
    trees = [est] if hasattr(est, "tree_") else list(np.asarray(est.estimators_).reshape(-1))
    for t in trees:
        tr = t.tree_
        inner = tr.children_left >= 0
        out += list(zip(tr.feature[inner].tolist(), tr.threshold[inner].tolist()))
    return out


def edge_rows(est, base: np.ndarray, seed: int = 3, n: int = 300) -> np.ndarray:
    """Rows whose value at a split's feature is the threshold itself, the next float64 up
    and down, its float32 rounding and the next float32 up and down."""
    rng = np.random.default_rng(seed)
    th = [(f, t) for f, t in thresholds(est) if abs(t) < 1e30]  # a missing-only split has t = inf
    if not th:
        return base[:0]
    rows = []
    for i in rng.choice(len(th), size=min(n, len(th)), replace=False):
        f, t = th[i]
        t32 = np.float32(t)
        for v in (t, np.nextafter(t, np.inf), np.nextafter(t, -np.inf), float(t32),
                  float(np.nextafter(t32, np.float32(np.inf))), float(np.nextafter(t32, np.float32(-np.inf)))):
            r = base[rng.integers(len(base))].copy()
            r[f] = v
            rows.append(r)
    return np.array(rows)


def reference(est, X):
    return est.predict_proba(X) if hasattr(est, "predict_proba") else est.predict(X)


def check(est, X, engines=ENGINES):
    """The model equals the estimator on X as float64 and float32, raw scores too."""
    for engine in engines:
        m = treescore.Model.from_sklearn(est, engine=engine, threads=1)
        for x in (X, X.astype(np.float32)):
            ref = reference(est, x)
            got = m.predict(x)
            assert got.shape == ref.shape, (engine, got.shape, ref.shape)
            bad = ~((got == ref) | (np.isnan(got) & np.isnan(ref)))
            assert not bad.any(), (f"{type(est).__name__} {engine} {x.dtype}: {int(bad.sum())} of {bad.size} differ; "
                                   f"first {got[bad][:3]} vs {ref[bad][:3]}")
            if hasattr(est, "decision_function"):
                assert np.array_equal(m.predict(x, raw_score=True), est.decision_function(x)), engine


@pytest.fixture(scope="module")
def data_nan():
    return make_xy(800, 1, nan=True)


@pytest.fixture(scope="module")
def data_dense():
    return make_xy(800, 2, nan=False)


def rows_for(est, X):
    return np.vstack([X, edge_rows(est, np.nan_to_num(X))])


@pytest.mark.parametrize("cls,kw", [
    (tree.DecisionTreeRegressor, {"max_depth": 8}),
    (tree.DecisionTreeClassifier, {"max_depth": 8}),
    (ensemble.RandomForestRegressor, {"n_estimators": 8, "max_depth": 10}),
    (ensemble.RandomForestClassifier, {"n_estimators": 8, "max_depth": 10}),
    (ensemble.ExtraTreesRegressor, {"n_estimators": 8, "max_depth": 10}),
    (ensemble.ExtraTreesClassifier, {"n_estimators": 8, "max_depth": 10}),
    (ensemble.HistGradientBoostingRegressor, {"max_iter": 25}),
    (ensemble.HistGradientBoostingClassifier, {"max_iter": 15}),
])
def test_with_nan(cls, kw, data_nan):
    X, y = data_nan
    classifier = "Classifier" in cls.__name__
    target = (y > np.median(y)).astype(int) + (y > np.quantile(y, 0.8)) if classifier else y
    est = cls(random_state=0, **kw).fit(X, target)
    Xt, _ = make_xy(300, 11, nan=True)
    check(est, rows_for(est, Xt))


@pytest.mark.parametrize("cls,kw", [
    (ensemble.GradientBoostingRegressor, {"n_estimators": 30, "max_depth": 3}),
    (ensemble.GradientBoostingRegressor, {"n_estimators": 10, "loss": "huber", "init": "zero"}),
    (ensemble.GradientBoostingClassifier, {"n_estimators": 20}),
])
def test_gradient_boosting(cls, kw, data_dense):
    """GradientBoosting refuses NaN in fit; predict_stages sends NaN right (checked with
    the regressor, whose predict takes NaN through the trees' validation or refuses it
    like scikit-learn)."""
    X, y = data_dense
    est = cls(random_state=0, **kw).fit(X, y if "Regressor" in cls.__name__ else (y > 0).astype(int))
    Xt, _ = make_xy(300, 12, nan=False)
    check(est, rows_for(est, Xt))


def test_gradient_boosting_multiclass(data_dense):
    X, y = data_dense
    yc = np.digitize(y, np.quantile(y, [0.25, 0.5, 0.75]))
    est = ensemble.GradientBoostingClassifier(n_estimators=8, max_depth=2, random_state=0).fit(X, yc)
    check(est, rows_for(est, make_xy(200, 13, nan=False)[0]), engines=["naive", "rapid", "auto"])


def test_hist_gradient_boosting_multiclass(data_nan):
    X, y = data_nan
    yc = np.digitize(y, np.quantile(y, [0.2, 0.4, 0.6, 0.8]))
    est = ensemble.HistGradientBoostingClassifier(max_iter=10, random_state=0).fit(X, yc)
    check(est, rows_for(est, make_xy(200, 14, nan=True)[0]), engines=["naive", "qs", "rapid", "auto"])


def test_hist_gradient_boosting_categorical(data_nan):
    """Categorical bitsets, with unknown categories (-1, 12, and non-integers such as 2.5)
    and NaN at predict time (they go where missing values go)."""
    X, y = data_nan
    X = X.copy()
    rng = np.random.default_rng(5)
    X[:, 4] = rng.integers(0, 12, size=len(X))
    X[rng.random(len(X)) < 0.05, 4] = np.nan
    y = y + np.where(np.isin(X[:, 4], [1, 4, 7, 10]), 2.0, 0.0)
    for cls in (ensemble.HistGradientBoostingRegressor, ensemble.HistGradientBoostingClassifier):
        target = y if cls is ensemble.HistGradientBoostingRegressor else (y > np.median(y)).astype(int)
        est = cls(max_iter=15, categorical_features=[3, 4], random_state=0).fit(X, target)
        Xt, _ = make_xy(300, 15, nan=True)
        Xt[:, 4] = rng.integers(-1, 15, size=len(Xt))  # -1, 12, 13, 14: unknown
        Xt[rng.random(len(Xt)) < 0.05, 4] = np.nan
        Xt[rng.random(len(Xt)) < 0.05, 3] = 7.0  # unknown in column 3
        # values with a fraction are unknown categories to scikit-learn's OrdinalEncoder
        # (2.5 is not category 2; they go where missing values go): truncating them was wrong
        frac = rng.random(len(Xt)) < 0.15
        Xt[frac, 4] = rng.integers(0, 12, size=int(frac.sum())) + rng.choice([0.5, 1e-9, 0.999], size=int(frac.sum()))
        Xt[rng.random(len(Xt)) < 0.05, 3] = 2.5
        m = treescore.Model.from_sklearn(est, engine="naive")
        assert m.info()["n_categorical_splits"] > 0
        check(est, rows_for(est, Xt), engines=["naive", "qs", "vqs", "rapid", "trees-simd", "auto"])


def test_deep_tree_thousands_of_leaves():
    """A fully grown tree (thousands of leaves, depth ~30) and a small forest of them."""
    X, y = make_xy(6000, 21, nan=False)
    X[:, 5] = np.random.default_rng(3).normal(size=len(X))
    est = tree.DecisionTreeRegressor(random_state=0).fit(X, y)
    assert est.tree_.n_leaves > 3000
    Xt = rows_for(est, make_xy(500, 22, nan=False)[0])
    check(est, Xt)
    forest = ensemble.RandomForestRegressor(n_estimators=3, random_state=0).fit(X, y)
    check(forest, Xt, engines=["naive", "qs", "vpred", "rapid", "deep", "auto"])


def test_multi_output_regression(data_dense):
    X, y = data_dense
    Y = np.column_stack([y, -2 * y + X[:, 1]])
    for est in (tree.DecisionTreeRegressor(max_depth=6), ensemble.RandomForestRegressor(n_estimators=5, max_depth=6,
                                                                                          random_state=0)):
        est.fit(X, Y)
        check(est, rows_for(est, make_xy(200, 23, nan=False)[0]), engines=["naive", "rapid", "auto"])


def test_binary_and_one_class(data_nan):
    X, y = data_nan
    est = ensemble.RandomForestClassifier(n_estimators=4, max_depth=5, random_state=0).fit(X, y > 0)
    check(est, X[:200], engines=["naive", "auto"])
    one = tree.DecisionTreeClassifier().fit(X, np.zeros(len(X), dtype=int))  # one class: (n, 1)
    check(one, X[:50], engines=["naive"])


def test_refusals(data_dense):
    X, y = data_dense
    from sklearn.linear_model import LinearRegression
    with pytest.raises(treescore.Error, match="LinearRegression is not supported") as e:
        treescore.Model.from_sklearn(LinearRegression().fit(X, y))
    assert e.value.status == "TS_ERR_UNSUPPORTED"
    multi = tree.DecisionTreeClassifier(max_depth=3).fit(X, np.column_stack([y > 0, y > 1]))
    with pytest.raises(treescore.Error, match="multi-output classifiers"):
        treescore.Model.from_sklearn(multi)
    gb = ensemble.GradientBoostingRegressor(n_estimators=3, init=LinearRegression()).fit(X, y)
    with pytest.raises(treescore.Error, match="init=LinearRegression"):
        treescore.Model.from_sklearn(gb)
    with pytest.raises(treescore.Error, match="not fitted"):
        treescore.Model.from_sklearn(ensemble.RandomForestRegressor())
    lgb = pytest.importorskip("lightgbm")
    with pytest.raises(treescore.Error, match="use treescore.Model.from_booster"):
        treescore.Model.from_sklearn(lgb.LGBMRegressor(n_estimators=2, verbose=-1).fit(X, y))
    # a column split at 0.0 and within 4e-35 of it: the double path reads |x| <= 1e-35 as
    # 0.0, and predict's move of such x (see test_split_at_zero) cannot serve both
    Xz = np.column_stack([np.repeat([-1e-35, 1e-35, 3e-35], 200), np.arange(600.0)])
    hz = ensemble.HistGradientBoostingRegressor(max_iter=2).fit(Xz, np.repeat([0.0, 5.0, 10.0], 200))
    assert {0.0, 2e-35} <= {t for _, t in thresholds(hz)}
    with pytest.raises(treescore.Error, match="splits at 0.0 and at 2e-35") as e:
        treescore.Model.from_sklearn(hz)
    assert e.value.status == "TS_ERR_UNSUPPORTED"


def test_split_at_zero():
    """HistGradientBoosting splits at exactly 0.0 on any feature with many zeros (its bin
    edges): such models were refused (the C scorer's double rows read |x| <= 1e-35 as 0.0).
    They are built with the split at 1e-35f, and predict moves x with 0 < |x| <= 1e-35f in
    those columns to +-2e-35: every x, tiny ones included, scores as scikit-learn's."""
    import scipy.sparse as sp

    rng = np.random.default_rng(11)
    X, y = make_xy(800, 31, nan=True)
    X[rng.random(X.shape) < 0.4] = 0.0
    Xz = np.column_stack([np.repeat([-1.0, 1.0], 200), np.arange(400.0)])
    hz = ensemble.HistGradientBoostingRegressor(max_iter=2).fit(Xz, Xz[:, 0] * 3)
    f32 = float(np.float32(1e-35))
    tiny = [1e-36, -1e-36, f32, -f32, np.nextafter(f32, 1.0), np.nextafter(f32, 0.0), 5e-324, -5e-324, 1e-40,
            3e-35, -3e-35, 0.0, -0.0, float(np.float32(1e-45))]
    for est, base in ((hz, Xz), (ensemble.HistGradientBoostingRegressor(max_iter=20, random_state=0).fit(X, y), X),
                      (ensemble.HistGradientBoostingClassifier(max_iter=8, random_state=0).fit(X, y > 0), X)):
        assert any(t == 0.0 for _, t in thresholds(est))
        rows = np.vstack([base[:100]] + [np.where(rng.random(base[:60].shape) < 0.5, v, base[:60]) for v in tiny])
        check(est, rows, engines=["naive", "rapid", "trees-simd", "vqs", "auto"])
        m = treescore.Model.from_sklearn(est, engine="naive")
        assert m._spec["tiny_columns"]
        kept = rows.copy()
        assert np.array_equal(pickle.loads(pickle.dumps(m)).predict(rows), reference(est, rows))
        assert np.array_equal(rows, kept, equal_nan=True)  # the caller's rows are not changed
        dense = np.nan_to_num(rows)
        assert np.array_equal(m.predict(sp.csr_matrix(dense)), m.predict(dense))


def test_pickle_and_names(data_nan):
    import pandas as pd

    X, y = data_nan
    df = pd.DataFrame(X, columns=[f"c{i}" for i in range(N_FEATURES)])
    est = ensemble.HistGradientBoostingRegressor(max_iter=5).fit(df, y)
    m = treescore.Model.from_sklearn(est)
    assert m.feature_names == list(df.columns)
    assert np.array_equal(m.predict(df), est.predict(df))
    m2 = pickle.loads(pickle.dumps(m))
    assert np.array_equal(m2.predict(X), est.predict(df))  # by position: the same columns
    assert "HistGradientBoostingRegressor" in repr(m2)


def test_ifelse_engine(data_nan, data_dense):
    """ifelse compiles C for each model (seconds): one model of each family."""
    X, y = data_nan
    Xd, yd = data_dense
    ests = [(ensemble.RandomForestClassifier(n_estimators=4, max_depth=6, random_state=0).fit(X, y > 0), X),
            (ensemble.HistGradientBoostingRegressor(max_iter=10, random_state=0).fit(X, y), X),
            (ensemble.GradientBoostingRegressor(n_estimators=10, random_state=0).fit(Xd, yd), Xd)]
    for est, data in ests:
        check(est, rows_for(est, data[:200]), engines=["ifelse"])


def test_pandas_categorical_columns():
    """HistGradientBoosting on a DataFrame with a pandas categorical column (numeric
    categories, categorical_features="from_dtype"): the column's values, not its codes."""
    import pandas as pd

    rng = np.random.default_rng(8)
    n = 600
    df = pd.DataFrame({"a": rng.normal(size=n), "cat": pd.Categorical(rng.choice([3, 10, 20, 31], size=n)),
                       "b": rng.normal(size=n)})
    y = df["a"].to_numpy() + np.where(df["cat"].astype(int).isin([10, 31]), 2.0, 0.0)
    est = ensemble.HistGradientBoostingRegressor(max_iter=10, random_state=0).fit(df, y)
    m = treescore.Model.from_sklearn(est, engine="naive")
    assert m.info()["n_categorical_splits"] > 0
    test = df.iloc[:200].copy()
    test.loc[test.index[:10], "cat"] = np.nan
    assert np.array_equal(m.predict(test), est.predict(test))
    assert np.array_equal(m.predict(test[["b", "cat", "a"]]), est.predict(test))  # by name
    # a column of text is refused naming the column (pandas' message named none)
    bad = test.copy()
    bad["b"] = bad["b"].astype(object)
    bad.loc[bad.index[3], "b"] = "x"
    with pytest.raises(TypeError, match="column 'b'"):
        m.predict(bad)


def test_dataframe_with_a_repeated_column_name_is_refused():
    """A DataFrame repeating a name the estimator reads ('a' twice: the training frame
    with a column added under a name it already had) was indexed with X[names], which
    gives both 'a' columns: every feature after the first read the column before it,
    silently (2.5 off on a 3-feature forest). scikit-learn refuses such a frame; so does
    Model for the training libraries' models. A frame with pandas' default labels is
    taken by position, as scikit-learn and Model take it."""
    import pandas as pd

    rng = np.random.default_rng(11)
    X = rng.normal(size=(300, 3))
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    est = ensemble.RandomForestRegressor(n_estimators=5, max_depth=4, random_state=0).fit(df, X[:, 0] * 2 + X[:, 1])
    m = treescore.Model.from_sklearn(est, engine="naive", threads=1)
    test = df.iloc[:40]
    repeated = pd.concat([test, test[["a"]] * 0 + 5.0], axis=1)  # a, b, c, a
    with pytest.raises(treescore.Error, match="2 columns named 'a'"):
        m.predict(repeated)
    with pytest.raises(treescore.Error, match="lacks 1 of the model's 3 features: 'c'"):
        m.predict(test.set_axis(["a", "b", "b"], axis=1))
    extra = test.assign(z=1.0)[["z", "c", "a", "b"]]  # by name: an extra column anywhere
    assert np.array_equal(m.predict(extra), est.predict(test))
    positional = test.set_axis([0, 1, 2], axis=1)
    assert np.array_equal(m.predict(positional), est.predict(test.to_numpy()))


def test_sample_of_every_kind(data_dense):
    """from_sklearn(est, sample=...) took only dense samples and named X in its errors: a
    scipy.sparse sample (which Model's sample= takes) failed with 'X must be 2-D (rows x
    columns), got an array of shape ()'. Now the sample is read as Model reads one
    (sparse included) and its errors name the sample."""
    sp = pytest.importorskip("scipy.sparse")
    X, y = data_dense
    est = ensemble.RandomForestRegressor(n_estimators=3, max_depth=4, random_state=0).fit(X, y)
    ref = est.predict(X[:50])
    for sample in (X[:100], sp.csr_matrix(np.where(np.abs(X[:100]) < 0.5, 0.0, X[:100])), X[:100].tolist()):
        m = treescore.Model.from_sklearn(est, sample=sample, threads=1)
        assert np.array_equal(m.predict(X[:50]), ref)
    with pytest.raises(treescore.Error, match="^sample must be 2-D"):
        treescore.Model.from_sklearn(est, sample=X[0])
