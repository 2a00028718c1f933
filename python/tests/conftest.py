# conftest.py: fixtures of the Python package tests: small LightGBM/XGBoost models trained once per session, a private cache dir.
"""Shared fixtures. The models are tiny (a few seconds to train all of them) and trained
in the session; treescore's cache (ifelse objects, the planner's wisdom) goes to a
temporary directory unless TREESCORE_CACHE_DIR is set."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pytest

# The trainers (LightGBM, XGBoost: OpenMP) run beside another pytest worker on few cores:
# OpenMP's default spin-waiting then starves both (a 1,000-tree XGBoost fit took 128 s
# instead of 5 under `-n 2` on 2 cores). Passive waiting, set before any trainer loads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

if "TREESCORE_CACHE_DIR" not in os.environ:
    os.environ["TREESCORE_CACHE_DIR"] = tempfile.mkdtemp(prefix="treescore-pytest-")

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "data" / "models"
N_FEATURES = 8
NAMES = [f"feat_{c}" for c in "abcdefgh"]


def make_data(n: int, seed: int) -> np.ndarray:
    """Rows with NaN (10%), exact zeros (5%) and a few repeated values (thresholds)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, N_FEATURES))
    X[rng.random(X.shape) < 0.05] = 0.0
    X[:, 3] = np.round(X[:, 3], 1)
    X[rng.random(X.shape) < 0.1] = np.nan
    return X


@pytest.fixture(scope="session")
def data():
    X = make_data(1500, 1)
    x0 = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1] * X[:, 2])
    yb = (x0 + np.random.default_rng(2).normal(size=len(X)) * 0.5 > 0).astype(np.float64)
    return X, yb


@pytest.fixture(scope="session")
def test_rows():
    return make_data(700, 3)


@pytest.fixture(scope="session")
def lgb_binary(data):
    """LightGBM binary classifier with named features."""
    lgb = pytest.importorskip("lightgbm")
    X, y = data
    ds = lgb.Dataset(X, y, feature_name=NAMES, free_raw_data=False)
    return lgb.train(dict(objective="binary", num_leaves=15, verbose=-1, num_threads=1, seed=1), ds, 40)


@pytest.fixture(scope="session")
def lgb_poisson(data):
    lgb = pytest.importorskip("lightgbm")
    X, y = data
    yc = np.random.default_rng(4).poisson(np.exp(np.clip(np.nan_to_num(X[:, 0]), -2, 2)))
    return lgb.train(dict(objective="poisson", num_leaves=7, verbose=-1, num_threads=1, seed=1),
                     lgb.Dataset(X, yc), 25)


@pytest.fixture(scope="session")
def xgb_binary(data):
    """XGBoost binary:logistic, no feature names."""
    xgb = pytest.importorskip("xgboost")
    X, y = data
    return xgb.train(dict(objective="binary:logistic", max_depth=4, nthread=1, seed=1), xgb.DMatrix(X, y), 30)


@pytest.fixture(scope="session")
def lgb_file(lgb_binary, tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("models") / "lgb_binary.txt"
    lgb_binary.save_model(str(p))
    return p


@pytest.fixture(scope="session")
def xgb_file(xgb_binary, tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("models") / "xgb_binary.json"
    xgb_binary.save_model(str(p))
    return p


def cli_binary():
    """The treescore CLI to compare with: $TS_BIN, else a build tree's, else None."""
    cands = [os.environ.get("TS_BIN", "")] + [str(ROOT / d / "treescore") for d in ("build", "build-py")]
    for c in cands:
        if c and os.access(c, os.X_OK):
            return c
    return None
