# tsmodels.py: the data sets and the LightGBM / XGBoost models the conformance tests train (cached by parameters).
"""Training data, scoring data and model variants of the conformance tests.

Every model is trained once per parameter set and kept in tests/conformance/.cache
(the key hashes the parameters, the data generator version and the library versions),
so a second test session trains nothing.
"""

from __future__ import annotations

import functools

import numpy as np

import tshelpers as H
from tshelpers import letor_gen

N_FEATURES = 40

# Training data: LETOR-like, 3,000 rows, queries of 20-100 docs, NaN in 20% of the
# features, the last feature always 0.
TRAIN_SPEC = dict(n_rows=3000, n_features=N_FEATURES, qmin=20, qmax=100, seed=1)
# Scoring data: the same distribution, another seed.
SCORE_SPEC = dict(n_rows=1000, n_features=N_FEATURES, qmin=20, qmax=100, seed=2)


@functools.lru_cache(maxsize=None)
def train_data(with_nan: bool = True) -> letor_gen.LetorData:
    return letor_gen.make_letor(**TRAIN_SPEC, nan_features=0.2 if with_nan else 0.0)


@functools.lru_cache(maxsize=None)
def score_base(include_inf: bool = True) -> np.ndarray:
    """Scoring rows: fresh LETOR-like rows with NaN, plus tiny values, denormals and -0.0
    in 2% of the cells, plus rows that are all NaN / all 0 / all -0.0 / all tiny."""
    inf = np.inf if include_inf else np.finfo(np.float32).max
    d = letor_gen.make_letor(**SCORE_SPEC)
    X = letor_gen.add_edge_values(d.X, seed=3)
    special = np.vstack([
        np.full(N_FEATURES, np.nan), np.zeros(N_FEATURES), np.full(N_FEATURES, -0.0),
        np.full(N_FEATURES, 1e-36), np.full(N_FEATURES, -1e-36),
        np.full(N_FEATURES, inf), np.full(N_FEATURES, -inf),
        np.full(N_FEATURES, np.finfo(np.float32).max), np.full(N_FEATURES, -np.finfo(np.float32).max),
    ]).astype(np.float32)
    return np.vstack([X, special]).astype(np.float32)


# ---- LightGBM ---------------------------------------------------------------------------

LGB_COMMON = dict(learning_rate=0.1, deterministic=True, force_row_wise=True, num_threads=2, seed=1,
                  verbose=-1, min_sum_hessian_in_leaf=1e-9, lambda_l2=0.0)

# name -> (parameters, rounds, train with NaN)
LGB_VARIANTS = {
    # lambdarank, 31 / 63 / 255 leaves, NaN in the training data (missing type NaN)
    "rank31": (dict(objective="lambdarank", num_leaves=31, min_data_in_leaf=5), 60, True),
    "rank63": (dict(objective="lambdarank", num_leaves=63, min_data_in_leaf=3), 50, True),
    "rank255": (dict(objective="lambdarank", num_leaves=255, min_data_in_leaf=2), 30, True),
    # zeros (and NaN) are the missing value (missing type Zero)
    "rank63_zero_as_missing": (dict(objective="lambdarank", num_leaves=63, min_data_in_leaf=3,
                                    zero_as_missing=True), 40, True),
    # trained without NaN (missing type None), scored with NaN
    "rank63_trained_without_nan": (dict(objective="lambdarank", num_leaves=63, min_data_in_leaf=3), 40, False),
    # a regression objective
    "regression63": (dict(objective="regression", num_leaves=63, min_data_in_leaf=3), 50, True),
}


def _train_lightgbm(path, params, rounds, with_nan):
    import lightgbm as lgb
    d = train_data(with_nan)
    ds = lgb.Dataset(d.X, label=d.y, group=d.groups if params["objective"] == "lambdarank" else None,
                     params={"verbose": -1})
    booster = lgb.train(params, ds, num_boost_round=rounds)
    booster.save_model(str(path))


@functools.lru_cache(maxsize=None)
def lightgbm_model(name: str):
    """(model path, booster loaded from that file, trees)."""
    import lightgbm as lgb
    extra, rounds, with_nan = LGB_VARIANTS[name]
    params = dict(LGB_COMMON, **extra)
    path = H.cached_file(f"lgb-{name}", ".txt",
                         lambda p: _train_lightgbm(p, params, rounds, with_nan),
                         params=params, rounds=rounds, with_nan=with_nan, train=TRAIN_SPEC)
    return path, lgb.Booster(model_file=str(path)), H.parse_lightgbm_text(path)


def lightgbm_predict(booster, X) -> np.ndarray:
    """LightGBM's own raw score of float32 rows (it widens float32 to double exactly)."""
    return np.asarray(booster.predict(np.asarray(X, dtype=np.float32), raw_score=True, num_threads=2),
                      dtype=np.float64)


# ---- XGBoost ------------------------------------------------------------------------------

XGB_COMMON = dict(eta=0.1, nthread=2, seed=1, verbosity=0)

# name -> (parameters, rounds)
XGB_VARIANTS = {
    "ndcg_hist_d6": (dict(objective="rank:ndcg", tree_method="hist", max_depth=6), 60),
    "ndcg_exact_d8": (dict(objective="rank:ndcg", tree_method="exact", max_depth=8), 40),
    "logistic_hist_d7": (dict(objective="binary:logistic", tree_method="hist", max_depth=7), 60),
    "sqerr_exact_d6": (dict(objective="reg:squarederror", tree_method="exact", max_depth=6), 60),
    "sqerr_hist_d8": (dict(objective="reg:squarederror", tree_method="hist", max_depth=8, base_score=1.25), 80),
    "dart_sqerr_hist_d6": (dict(objective="reg:squarederror", tree_method="hist", max_depth=6,
                                booster="dart", rate_drop=0.1), 40),
}


def _xgb_label(name, d):
    return (d.y >= 2).astype(np.float32) if "logistic" in name else d.y.astype(np.float32)


def _train_xgboost(path, name, params, rounds):
    import xgboost as xgb
    d = train_data(True)
    dm = xgb.DMatrix(d.X, label=_xgb_label(name, d), qid=d.qid if params["objective"].startswith("rank:") else None,
                     missing=np.nan)
    booster = xgb.train(params, dm, num_boost_round=rounds)
    booster.save_model(str(path))


@functools.lru_cache(maxsize=None)
def xgboost_model(name: str):
    """(model path (.json), booster loaded from that file, trees)."""
    import xgboost as xgb
    extra, rounds = XGB_VARIANTS[name]
    params = dict(XGB_COMMON, **extra)
    path = H.cached_file(f"xgb-{name}", ".json", lambda p: _train_xgboost(p, name, params, rounds),
                         params=params, rounds=rounds, train=TRAIN_SPEC)
    booster = xgb.Booster(model_file=str(path))
    booster.set_param({"nthread": 2})
    return path, booster, H.parse_xgboost_json(path)


def xgboost_margin(booster, X) -> np.ndarray:
    """XGBoost's own margin (raw score) of float32 rows."""
    return np.asarray(booster.inplace_predict(np.asarray(X, dtype=np.float32), predict_type="margin",
                                              missing=np.nan), dtype=np.float64)


def xgboost_leaves(booster, X) -> np.ndarray:
    """Node id of the leaf each row reaches in each tree ([rows, trees])."""
    import xgboost as xgb
    dm = xgb.DMatrix(np.asarray(X, dtype=np.float32), missing=np.nan)
    return np.asarray(booster.predict(dm, pred_leaf=True), dtype=np.int64).reshape(X.shape[0], -1)
