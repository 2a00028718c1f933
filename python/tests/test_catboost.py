# test_catboost.py: treescore.Model on CatBoost files (.cbm and JSON): CatBoost's RawFormulaVal bit for bit, K columns for multiclass.
from __future__ import annotations

import os

import numpy as np
import pytest

import treescore
from conftest import MODELS

catboost = pytest.importorskip("catboost")


def rows(seed=4, n=300, k=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, k))
    X[rng.random(X.shape) < 0.1] = np.nan
    X[:5] = [np.inf, -np.inf, 0.0, -0.0, np.nan]
    return X


def reference(path, X):
    m = catboost.CatBoost()
    m.load_model(str(path))
    return np.asarray(m.predict(X, prediction_type="RawFormulaVal", thread_count=1))


@pytest.mark.parametrize("name", ["cb_small_oblivious", "cb_small_multiclass_depthwise"])
@pytest.mark.parametrize("suffix", [".cbm", ".json"])
def test_catboost_files(name, suffix):
    """From a file and from bytes, float64 and float32 rows: CatBoost's raw values (it
    converts its input to float32, and so does treescore for CatBoost models)."""
    path = MODELS / (name + suffix)
    X = rows()
    ref = reference(MODELS / (name + ".cbm"), X)
    for model in (treescore.Model(model_file=str(path), engine="naive"),
                  treescore.Model(model_str=path.read_bytes(), engine="auto")):
        assert model.model_format == ("catboost" if suffix == ".cbm" else "catboost-json")
        for x in (X, X.astype(np.float32)):
            got = model.predict(x, raw_score=True)
            assert got.shape == ref.shape
            assert np.array_equal(got.view(np.uint64), ref.view(np.uint64))


# ---- categorical features: DataFrames (issue 24, part 2) ----------------------------------

CITIES = ["Oslo", "Bergen", "Turku", "Aarhus", "Saint Petersburg", "Z\u00fcrich", "", "x" * 70, "7"]


def cat_frame(n, seed, unseen=False):
    import pandas as pd
    rng = np.random.default_rng(seed)
    f0 = rng.normal(size=n).astype(np.float32).astype(np.float64)
    f0[rng.random(n) < 0.1] = np.nan
    df = pd.DataFrame({"f0": f0, "city": rng.choice(CITIES, n), "level": rng.integers(0, 8, n),
                       "f1": rng.normal(size=n), "tag": rng.choice(["red", "green", "blue"], n)})
    if unseen:
        df.loc[df.index[::6], "city"] = "Atlantis"
        df.loc[df.index[1::7], "level"] = 42
        df.loc[df.index[2::9], "tag"] = "mauve"
    return df


@pytest.fixture(scope="module")
def cat_models(tmp_path_factory):
    """A CTR model (single-feature CTRs, oblivious, RMSE), a one-hot model (Depthwise,
    MultiClass) and a mixed one (Logloss): {name: (json path, cbm path, model)}."""
    d = tmp_path_factory.mktemp("cb-cat")
    df = cat_frame(700, 1)
    city = df["city"].map({c: i for i, c in enumerate(CITIES)}).to_numpy()
    z = np.nan_to_num(df["f0"].to_numpy()) + 0.4 * (city % 4) + 0.3 * df["level"] + (df["tag"] == "red")
    out = {}
    specs = {
        "ctr": (z, dict(loss_function="RMSE", one_hot_max_size=1, simple_ctr=["Borders", "Counter"])),
        "onehot": (np.digitize(z, np.quantile(z, [0.3, 0.6])),
                   dict(loss_function="MultiClass", one_hot_max_size=255, grow_policy="Depthwise")),
        "mixed": ((z > np.median(z)).astype(int), dict(loss_function="Logloss", one_hot_max_size=3)),
    }
    for name, (y, params) in specs.items():
        m = catboost.CatBoost(dict(params, iterations=20, depth=4, max_ctr_complexity=1, random_seed=0, verbose=0,
                                   thread_count=1, allow_writing_files=False))
        m.fit(catboost.Pool(df, y, cat_features=["city", "level", "tag"]))
        js = d / f"{name}.json"
        m.save_model(str(js), format="json")
        cbm = d / f"{name}.cbm"
        m.save_model(str(cbm))
        out[name] = (js, cbm, m)
    return out


@pytest.mark.parametrize("name", ["ctr", "onehot", "mixed"])
def test_catboost_categorical_frames(cat_models, name):
    """A DataFrame with string (object and pandas 'string'), category and integer columns,
    unseen categories and NaN floats: predict(raw_score=True) equals CatBoost's RawFormulaVal
    bit for bit, in every engine; reordered columns are found by name."""
    js, cbm, m = cat_models[name]
    df = cat_frame(250, 2, unseen=True)
    ref = np.asarray(m.predict(df, prediction_type="RawFormulaVal", thread_count=1))
    variants = [df, df.astype({"city": "category", "tag": "category"}), df.astype({"city": "string"}),
                df[["tag", "f1", "level", "city", "f0"]]]
    for path in (js, cbm):
        for engine in ("naive", "qs", "vqs", "rapid", "trees-simd", "oblivious", "auto"):
            model = treescore.Model(str(path), engine=engine)
            for v in variants:
                got = model.predict(v, raw_score=True)
                assert np.array_equal(got.reshape(ref.shape), ref), (path.name, engine)


def test_catboost_categorical_inputs_refused(cat_models):
    """Values CatBoost refuses as categories (NaN, None, real numbers) are refused; a
    numpy array holds category ids (NaN: unseen)."""
    js, _, m = cat_models["ctr"]
    model = treescore.Model(str(js))
    df = cat_frame(20, 3)
    bad = [df.astype({"level": np.float64}), df.assign(city=[None] + list(df["city"][1:])),
           df.assign(city=[np.nan] + list(df["city"][1:])), df.assign(level=[1.5] + [1] * 19)]
    for v in bad:
        with pytest.raises(TypeError, match="categorical"):
            model.predict(v, raw_score=True)
    ids = model._core.category_ids(1, list(df["city"]))
    ids = np.frombuffer(ids, dtype=np.float32)
    assert np.all(ids == ids.astype(int)) and ids.min() >= 0
    X = df.to_numpy(dtype=object)
    X[:, 1] = ids
    X[:, 2] = np.frombuffer(model._core.category_ids(2, [str(v) for v in df["level"]]), dtype=np.float32)
    X[:, 4] = np.frombuffer(model._core.category_ids(4, list(df["tag"])), dtype=np.float32)
    ref = np.asarray(m.predict(df, prediction_type="RawFormulaVal", thread_count=1))
    assert np.array_equal(model.predict(X.astype(np.float64), raw_score=True), ref)


def test_catboost_categorical_numpy_values():
    """A numpy array (or list) of integers or objects was read as category ids, as a float
    array is, where CatBoost's predict reads the values themselves (the integer 3 is the
    category "3"): silently wrong scores for int-coded categories (3.12 against 1.97 on
    this model). Such arrays are now mapped by value, as DataFrames are; float arrays
    (which CatBoost refuses for a categorical model) still hold ids."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    cat = rng.integers(0, 5, 400)
    x = rng.normal(size=400)
    y = cat + x + rng.normal(size=400) * 0.1
    m = catboost.CatBoostRegressor(iterations=20, depth=3, verbose=0, cat_features=[0], thread_count=1,
                                   allow_writing_files=False).fit(pd.DataFrame({"c": cat, "x": x}), y)
    model = treescore.Model.from_booster(m)
    A = np.column_stack([cat, (x * 100).astype(np.int64)])
    ref = np.asarray(m.predict(A, prediction_type="RawFormulaVal", thread_count=1))
    for v in (A, A.astype(np.int32), A.tolist(), A.astype(object)):
        assert np.array_equal(model.predict(v, raw_score=True), ref), type(v)
    with pytest.raises(TypeError, match="categorical"):
        model.predict(np.array([[1.5, 2]], dtype=object))


def test_catboost_categorical_object_array(cat_models):
    """The same for strings: an object array of a frame's values scores as the frame."""
    js, _, m = cat_models["mixed"]
    model = treescore.Model(str(js))
    df = cat_frame(120, 5, unseen=True)
    X = df.to_numpy(dtype=object)
    ref = np.asarray(m.predict(X, prediction_type="RawFormulaVal", thread_count=1))
    assert np.array_equal(model.predict(X, raw_score=True).reshape(ref.shape), ref)
    assert np.array_equal(model.predict(X.tolist(), raw_score=True).reshape(ref.shape), ref)


# ---- live models (from_booster) and predict's transforms (issue 24) ----------------------

def live_cases():
    """name -> (CatBoost class, parameters, target kind)."""
    return {
        "catboost-rmse": (catboost.CatBoost, dict(loss_function="RMSE"), "reg"),
        "regressor-rmse-depthwise": (catboost.CatBoostRegressor, dict(grow_policy="Depthwise"), "reg"),
        "regressor-multirmse": (catboost.CatBoostRegressor, dict(loss_function="MultiRMSE"), "multi"),
        "classifier-logloss": (catboost.CatBoostClassifier, dict(loss_function="Logloss"), "bin"),
        "classifier-crossentropy": (catboost.CatBoostClassifier, dict(loss_function="CrossEntropy"), "prob"),
        "catboost-logloss-lossguide": (catboost.CatBoost, dict(loss_function="Logloss", grow_policy="Lossguide"),
                                       "bin"),
        "classifier-multiclass": (catboost.CatBoostClassifier, dict(loss_function="MultiClass"), "mc"),
        "classifier-multiclass-depthwise": (catboost.CatBoostClassifier,
                                            dict(loss_function="MultiClass", grow_policy="Depthwise"), "mc"),
        "classifier-multilogloss": (catboost.CatBoostClassifier, dict(loss_function="MultiLogloss"), "multilabel"),
        "classifier-onevsall": (catboost.CatBoostClassifier, dict(loss_function="MultiClassOneVsAll"), "ova"),
        "ranker-yetirank": (catboost.CatBoostRanker, dict(loss_function="YetiRank"), "rank"),
        "ranker-pairlogit": (catboost.CatBoostRanker, dict(loss_function="PairLogit"), "rank"),
        "ranker-queryrmse": (catboost.CatBoostRanker, dict(loss_function="QueryRMSE"), "rank"),
    }


def live_target(kind, X, rng):
    z = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) ** 2 - np.nan_to_num(X[:, 2]) + rng.normal(0, 0.2, len(X))
    if kind == "bin":
        return (z > np.median(z)).astype(int)
    if kind == "prob":
        return 1 / (1 + np.exp(-2 * z))
    if kind in ("mc", "ova"):
        return np.digitize(z, np.quantile(z, [0.25, 0.5, 0.75]))
    if kind == "multi":
        return np.stack([z, np.nan_to_num(X[:, 3]) - z], axis=1)
    if kind == "multilabel":
        return np.stack([z > 0, np.nan_to_num(X[:, 3]) > 0], axis=1).astype(int)
    if kind == "rank":
        return np.clip(np.round(z + 1), 0, 4)
    return z


@pytest.fixture(scope="module")
def live_models(tmp_path_factory):
    """{name: (fitted model, its .cbm path, kind)}: every CatBoost class, trained here
    (30 trees of depth 6, a high learning rate: raw scores far from 0)."""
    d = tmp_path_factory.mktemp("cb-live")
    rng = np.random.default_rng(11)
    X = rows(seed=12, n=805)[5:]  # NaN, no infinities (CatBoost refuses them in training)
    out = {}
    for name, (cls, params, kind) in live_cases().items():
        params = dict(dict(iterations=30, learning_rate=0.5, random_seed=0, verbose=0, thread_count=1,
                           allow_writing_files=False), **params)
        if params.get("grow_policy") != "Lossguide":
            params.setdefault("depth", 6)
        m = cls(**params) if cls is not catboost.CatBoost else cls(params)
        y = live_target(kind, X, rng)
        if kind == "rank":
            m.fit(catboost.Pool(X, y, group_id=np.repeat(np.arange(len(X) // 20), 20)))
        else:
            m.fit(X, y)
        path = d / f"{name}.cbm"
        m.save_model(str(path))
        out[name] = (m, path, kind)
    return out


PROBABILITY = {"bin", "prob", "mc", "multilabel", "ova"}


def cb_predict(m, X, prediction_type):
    """CatBoost's predict of any class (CatBoostRanker.predict takes no prediction_type)."""
    return np.asarray(catboost.CatBoost.predict(m, X, prediction_type=prediction_type, thread_count=1))


@pytest.mark.parametrize("name", sorted(live_cases()))
def test_from_booster_every_class(live_models, name):
    """from_booster equals the model's .cbm file bit for bit; predict(raw_score=True) is
    CatBoost's RawFormulaVal exactly; predict is its Probability (same shape: (n, 2) for
    binary, (n, K) for MultiClass and MultiLogloss) for the classification losses, within
    1e-12 relative (the sigmoid bit for bit), and RawFormulaVal for every other loss."""
    m, path, kind = live_models[name]
    X = rows(seed=13, n=400)
    live = treescore.Model.from_booster(m)
    filed = treescore.Model(model_file=str(path))
    assert live.model_format == "catboost" and live.objective == filed.objective
    raw = cb_predict(m, X, "RawFormulaVal")
    for model in (live, filed):
        got = model.predict(X, raw_score=True)
        assert got.shape == raw.shape and np.array_equal(got, raw), name
    got = live.predict(X)
    assert np.array_equal(got, filed.predict(X))
    if kind in PROBABILITY:
        ref = cb_predict(m, X, "Probability")
        assert got.shape == ref.shape, (name, got.shape, ref.shape)
        assert np.all(np.abs(got - ref) <= 1e-12 * np.abs(ref)), (name, np.max(np.abs(got - ref) / np.abs(ref)))
        if kind in ("bin", "prob", "multilabel", "ova"):  # CatBoost's sigmoid: libm's exp, the same bits
            assert np.array_equal(got, ref), name
        if hasattr(m, "predict_proba"):
            assert np.array_equal(np.asarray(m.predict_proba(X, thread_count=1)), ref)
    else:
        assert np.array_equal(got, raw), name


def test_from_booster_probability_of_extreme_scores():
    """Binary probabilities of raw scores past +-12 (1 - p below 1e-5, where one unit in
    the last place of p is 1e-11 of 1 - p): CatBoost's [1 - p, p] bit for bit, and the
    MultiClass softmax of scores far apart within 1e-12."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(600, 3))
    y = (X[:, 0] > 0).astype(int)
    m = catboost.CatBoostClassifier(iterations=60, learning_rate=1.0, depth=6, l2_leaf_reg=0.001, random_seed=0,
                                    verbose=0, thread_count=1, allow_writing_files=False).fit(X, y)
    raw = m.predict(X, prediction_type="RawFormulaVal")
    assert np.abs(raw).max() > 12
    assert np.array_equal(treescore.Model.from_booster(m).predict(X), m.predict_proba(X))
    yc = np.digitize(X[:, 0], [-1, 0, 1])
    mc = catboost.CatBoostClassifier(loss_function="MultiClass", iterations=60, learning_rate=1.0, depth=6,
                                     random_seed=0, verbose=0, thread_count=1, allow_writing_files=False).fit(X, yc)
    ref = mc.predict_proba(X)
    got = treescore.Model.from_booster(mc).predict(X)
    assert got.shape == ref.shape
    assert np.all(np.abs(got - ref) <= 1e-12 * ref), np.max(np.abs(got - ref) / ref)


def test_from_booster_temporary_file(live_models, monkeypatch):
    """Without the in-memory form, from_booster goes through a private temporary file and
    removes it; an unfitted model is refused."""
    import tempfile
    m, path, _ = live_models["classifier-multiclass"]
    made = []
    real = tempfile.mkdtemp

    def mkdtemp(*a, **k):
        made.append(real(*a, **k))
        return made[-1]

    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp)
    monkeypatch.setattr(type(m), "_serialize_model", lambda self: (_ for _ in ()).throw(RuntimeError("no")))
    X = rows(seed=14, n=50)
    got = treescore.Model.from_booster(m).predict(X, raw_score=True)
    assert np.array_equal(got, treescore.Model(model_file=str(path)).predict(X, raw_score=True))
    assert len(made) == 1 and not os.path.exists(made[0])
    with pytest.raises(treescore.Error, match="not fitted"):
        treescore.Model.from_booster(catboost.CatBoostRegressor(iterations=2))
    with pytest.raises(TypeError, match="CatBoost"):
        treescore.Model.from_booster(object())


@pytest.mark.parametrize("name", ["ctr", "onehot", "mixed"])
def test_from_booster_categorical(cat_models, name):
    """A live categorical model (one-hot, CTRs) scores DataFrames as its files do, and
    predict gives CatBoost's Probability for the MultiClass and Logloss ones."""
    js, cbm, m = cat_models[name]
    df = cat_frame(200, 5, unseen=True)
    live = treescore.Model.from_booster(m)
    raw = np.asarray(m.predict(df, prediction_type="RawFormulaVal", thread_count=1))
    assert np.array_equal(live.predict(df, raw_score=True).reshape(raw.shape), raw)
    assert np.array_equal(live.predict(df), treescore.Model(str(cbm)).predict(df))
    if name != "ctr":
        ref = np.asarray(m.predict(df, prediction_type="Probability", thread_count=1))
        got = live.predict(df)
        assert got.shape == ref.shape and np.all(np.abs(got - ref) <= 1e-12 * ref)


@pytest.mark.parametrize("loss", ["Poisson", "Tweedie:variance_power=1.5"])
def test_from_booster_exponent_objectives(loss):
    """Poisson and Tweedie: predict is CatBoostRegressor.predict's exp(raw) (prediction_type
    "Exponent"; CatBoost's fast exponential within 1e-15 relative of libm's), raw_score its
    RawFormulaVal bit for bit. predict used to return the raw score (the log of the mean)."""
    rng = np.random.default_rng(8)
    X = rng.normal(size=(500, 3))
    y = rng.poisson(np.exp(0.5 * X[:, 0]))
    m = catboost.CatBoostRegressor(iterations=30, depth=4, loss_function=loss, random_seed=0, verbose=0,
                                   thread_count=1, allow_writing_files=False).fit(X, y)
    ts = treescore.Model.from_booster(m)
    assert np.array_equal(ts.predict(X, raw_score=True), m.predict(X, prediction_type="RawFormulaVal"))
    ref = m.predict(X, thread_count=1)
    got = ts.predict(X)
    assert got.shape == ref.shape
    assert np.all(np.abs(got - ref) <= 1e-15 * ref), np.max(np.abs(got - ref) / ref)


def test_from_booster_rmse_with_uncertainty():
    """RMSEWithUncertainty: CatBoostRegressor.predict returns [mean, variance] (prediction_type
    "RMSEWithUncertainty": the second score is the log of the standard deviation, returned
    as exp(2 raw)); predict returned the raw pair, so its second column was the log of the
    standard deviation where CatBoost gives the variance (0.55 against 2.99 on a row)."""
    rng = np.random.default_rng(9)
    X = rng.normal(size=(500, 3))
    y = 2 * X[:, 0] + rng.normal(size=500) * np.abs(X[:, 1])
    m = catboost.CatBoostRegressor(iterations=20, depth=3, loss_function="RMSEWithUncertainty", random_seed=0,
                                   verbose=0, thread_count=1, allow_writing_files=False).fit(X, y)
    ts = treescore.Model.from_booster(m)
    raw = m.predict(X, prediction_type="RawFormulaVal")
    assert np.array_equal(ts.predict(X, raw_score=True), raw)
    ref = m.predict(X, thread_count=1)
    got = ts.predict(X)
    assert got.shape == ref.shape == (500, 2)
    assert np.array_equal(got[:, 0], ref[:, 0])
    assert np.all(np.abs(got[:, 1] - ref[:, 1]) <= 1e-15 * ref[:, 1]), np.max(np.abs(got - ref) / ref)


def test_classes_without_scores_refused(tmp_path):
    """A MultiClass model given class_names that the training labels do not all use
    (class_names [0, 1, 2, 3], labels 0, 1, 3) scores fewer classes than it names:
    class_params' class_to_label is [0, 1, 3], and CatBoost's predict writes the missing
    class a RawFormulaVal of -inf and a probability of about 0, in its place (4 columns).
    treescore read the 3 scores as 3 columns: column 2 held class 3's probability, silently
    misaligned. The same with classes_count=5 and labels 0, 2, 4. Such models are refused
    (.cbm, JSON, from_booster, the CLI)."""
    import subprocess
    from conftest import cli_binary
    rng = np.random.default_rng(9)
    X = rng.normal(size=(300, 3))
    bins = np.digitize(X[:, 0] * 2 + rng.normal(size=300) * 0.3, [-1, 1])
    y = np.array([0, 1, 3])[bins]
    m = catboost.CatBoostClassifier(iterations=5, depth=3, loss_function="MultiClass", class_names=[0, 1, 2, 3],
                                    verbose=0, thread_count=1, allow_writing_files=False).fit(X, y)
    assert m.predict_proba(X[:3]).shape == (3, 4)
    cbm, js = tmp_path / "gap.cbm", tmp_path / "gap.json"
    m.save_model(str(cbm))
    m.save_model(str(js), format="json")
    for load in (lambda: treescore.Model.from_booster(m), lambda: treescore.Model(model_file=cbm),
                 lambda: treescore.Model(model_file=js)):
        with pytest.raises(treescore.Error, match=r"4 classes \(class_names, classes_count\) but scores 3"):
            load()
    # classes_count=5 with labels 0, 2, 4: CatBoost's 5 columns, -inf raw for classes 1 and 3
    cc = catboost.CatBoostClassifier(iterations=5, depth=3, loss_function="MultiClass", classes_count=5, verbose=0,
                                     thread_count=1, allow_writing_files=False).fit(X, np.array([0, 2, 4])[bins])
    assert cc.predict_proba(X[:3]).shape == (3, 5)
    with pytest.raises(treescore.Error, match=r"5 classes \(class_names, classes_count\) but scores 3"):
        treescore.Model.from_booster(cc)
    exe = cli_binary()
    if exe is not None:
        p = subprocess.run([exe, "info", "-m", str(cbm)], capture_output=True, text=True, timeout=60)
        assert p.returncode == 1 and "class_names" in p.stderr, p.stderr
    # every class named and used: loaded as before
    full = catboost.CatBoostClassifier(iterations=5, depth=3, loss_function="MultiClass", class_names=[0, 1, 3],
                                       verbose=0, thread_count=1, allow_writing_files=False).fit(X, y)
    got = treescore.Model.from_booster(full).predict(X)
    assert got.shape == (300, 3) and np.allclose(got, full.predict_proba(X), rtol=1e-14, atol=0)
