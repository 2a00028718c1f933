# test_catboost.py: treescore.Model on CatBoost files (.cbm and JSON): CatBoost's RawFormulaVal bit for bit, K columns for multiclass.
from __future__ import annotations

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
