# test_int64_inputs.py: integer arrays past 2^53 (nanosecond timestamps) are rounded to float32 once, as XGBoost, CatBoost and scikit-learn's trees round them.
"""XGBoost, CatBoost and scikit-learn's trees compare float32 values: they convert an int64
array to float32 directly (one rounding). Converting it to float64 first and then to float32
rounds twice, and past 2^53 the two differ by one float32 step for values within 128 of a
float32 midpoint (a nanosecond timestamp, 1.7e18, is such a value with odds 2^-29 a
value): another branch where a threshold sits there. The rows here are built to sit there."""

from __future__ import annotations

import json

import numpy as np
import pytest

import treescore

BASE = 1_700_000_000_000_000_000  # a nanosecond timestamp of 2023


def _train_x(n=400, seed=22):
    rng = np.random.default_rng(seed)
    X = (BASE + rng.integers(0, 2 ** 45, size=(n, 1))).astype(np.int64)
    y = (X[:, 0] > np.median(X[:, 0])).astype(float) + rng.normal(scale=0.01, size=n)
    return X, y


def _double_rounding_rows(t) -> np.ndarray:
    """Integers whose direct float32 rounding and float64-then-float32 rounding fall on the
    two sides of the float32 threshold t: they sit within 128 of the float32 midpoint
    under t, on the side where the float64 value (the midpoint itself) ties to the other
    float32 than the nearest one."""
    t = np.float32(t)
    lo = np.nextafter(t, np.float32(-np.inf))
    mid = (int(t) + int(lo)) // 2
    odd = int(np.frombuffer(t.tobytes(), np.uint32)[0]) & 1
    vals = [mid + k for k in (1, 5, 100, 127)] if odd else [mid - k for k in (1, 5, 100, 127)]
    X = np.array(vals, dtype=np.int64)[:, None]
    assert (X.astype(np.float32) != X.astype(np.float64).astype(np.float32)).all()
    return X


def _check(model, reference, X, float32_sum=False, sparse=("csr", "csc", "coo")):
    """predict on int64, uint64 and list rows, on DataFrames of int64, nullable Int64
    and uint64 columns and on int64 scipy.sparse matrices, equals the library's on the same input (XGBoost: its float32 sum of
    the base and one leaf, which is the double sum rounded once)."""
    pd = pytest.importorskip("pandas")
    frames = [pd.DataFrame(X), pd.DataFrame(X).astype("Int64"), pd.DataFrame(X.astype(np.uint64))]
    sp = pytest.importorskip("scipy.sparse")
    for Xin in [X, X.astype(np.uint64), X.tolist()] + frames + [sp.csr_matrix(X).asformat(f) for f in sparse]:
        got = model.predict(Xin)
        got = got.astype(np.float32).astype(np.float64) if float32_sum else got
        ref = np.asarray(reference(X if isinstance(Xin, (np.ndarray, list)) else Xin), dtype=np.float64)
        assert np.array_equal(got, ref), (type(Xin), getattr(Xin, "dtypes", getattr(Xin, "dtype", None)), got, ref)


def test_xgboost_int64_past_2_53():
    xgb = pytest.importorskip("xgboost")
    X, y = _train_x()
    est = xgb.XGBRegressor(n_estimators=1, max_depth=1, tree_method="exact").fit(X, y)
    t = json.loads(est.get_booster().get_dump(dump_format="json")[0])["split_condition"]
    _check(treescore.Model.from_booster(est), est.predict, _double_rounding_rows(t), float32_sum=True)


def test_xgboost_arrow_int64_past_2_53():
    """A pyarrow Table read by position (the model names no features): XGBoost rounds its
    int64 column to float32 once."""
    xgb = pytest.importorskip("xgboost")
    pa = pytest.importorskip("pyarrow")
    X, y = _train_x()
    est = xgb.XGBRegressor(n_estimators=1, max_depth=1, tree_method="exact").fit(X, y)
    t = json.loads(est.get_booster().get_dump(dump_format="json")[0])["split_condition"]
    rows = _double_rounding_rows(t)
    table = pa.table({"f0": rows[:, 0]})
    got = treescore.Model.from_booster(est).predict(table).astype(np.float32)
    assert np.array_equal(got, est.predict(table)), (got, est.predict(table))


def test_catboost_int64_past_2_53(tmp_path):
    cb = pytest.importorskip("catboost")
    X, y = _train_x()
    est = cb.CatBoostRegressor(iterations=1, depth=1, verbose=0, thread_count=1, allow_writing_files=False).fit(X.astype(np.float32), y)
    est.save_model(str(tmp_path / "m.json"), format="json")
    border = json.load(open(tmp_path / "m.json"))["features_info"]["float_features"][0]["borders"][0]
    t = np.nextafter(np.float32(border), np.float32(np.inf))  # x > border: true from t on
    # CatBoost reads an int64 COO matrix through float64 (two roundings) but CSR and CSC
    # in one step; treescore rounds every format once
    _check(treescore.Model.from_booster(est), est.predict, _double_rounding_rows(t), sparse=("csr", "csc"))


def test_sklearn_tree_int64_past_2_53():
    pytest.importorskip("sklearn")
    from sklearn.tree import DecisionTreeRegressor
    X, y = _train_x()
    est = DecisionTreeRegressor(max_depth=1).fit(X, y)
    th = est.tree_.threshold[0]  # float32(x) <= th, th a float64 between two float32s
    t = np.float32(th)
    t = t if float(t) > th else np.nextafter(t, np.float32(np.inf))
    rows = _double_rounding_rows(t)
    _check(treescore.Model.from_sklearn(est), est.predict, rows)
    # a frame mixing the int64 column with a float one: pandas (so scikit-learn) goes
    # through float64, two roundings; treescore follows
    pd = pytest.importorskip("pandas")
    est2 = DecisionTreeRegressor(max_depth=1).fit(pd.DataFrame({"a": X[:, 0], "z": np.zeros(len(X))}), y)
    assert est2.tree_.threshold[0] == th
    mixed = pd.DataFrame({"a": rows[:, 0], "z": np.zeros(len(rows))})
    assert np.array_equal(treescore.Model.from_sklearn(est2).predict(mixed), est2.predict(mixed))


def test_catboost_categorical_model_int64_array_past_2_53():
    """A CatBoost model with a categorical feature reads an int64 array's categories by
    value and its numbers as float32 rounded once (objects through float64, as there)."""
    cb = pytest.importorskip("catboost")
    pd = pytest.importorskip("pandas")
    X, y = _train_x()
    c = np.random.default_rng(1).integers(0, 3, size=len(X))
    est = cb.CatBoostRegressor(iterations=1, depth=1, verbose=0, thread_count=1, allow_writing_files=False,
                               one_hot_max_size=1, max_ctr_complexity=1)
    est.fit(pd.DataFrame({"a": X[:, 0], "c": c}), y, cat_features=[1])
    border = est._get_borders()[0][0]  # the float feature's one border: x > border
    t = np.nextafter(np.float32(border), np.float32(np.inf))
    rows = _double_rounding_rows(t)
    Xin = np.c_[rows, np.ones(len(rows), dtype=np.int64)]
    m = treescore.Model.from_booster(est)
    for data in (Xin, Xin.astype(object), pd.DataFrame({"a": Xin[:, 0], "c": Xin[:, 1]})):
        assert np.array_equal(m.predict(data), est.predict(data)), type(data)
