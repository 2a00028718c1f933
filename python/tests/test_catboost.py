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
