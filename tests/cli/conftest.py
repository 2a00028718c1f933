"""conftest.py: fixtures for the CLI tests: the treescore binary (TS_BIN) and model files."""
import os

import pytest

from cli_helpers import MODELS, Treescore, binary_path

# The trainers (LightGBM, XGBoost: OpenMP) run beside another pytest worker on few cores:
# OpenMP's default spin-waiting then starves both (a 1,000-tree XGBoost fit took 128 s
# instead of 5 under `-n 2` on 2 cores). Passive waiting, set before any trainer loads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


@pytest.fixture(scope="session")
def ts():
    path = binary_path()
    if not path.is_file() or not os.access(path, os.X_OK):
        pytest.fail(f"treescore binary not found at {path}: build it (cmake -S . -B build && "
                    f"cmake --build build) or point TS_BIN at it", pytrace=False)
    return Treescore(path)


@pytest.fixture(scope="session")
def lgb_model():
    """The real LightGBM ranker (136 features: max_feature_idx=135)."""
    return MODELS / "rankeval_LightGBM.model.txt"


@pytest.fixture(scope="session")
def trained_lgb_model(tmp_path_factory):
    """A LightGBM lambdarank model trained here on random data with NaNs (5 trees of 7
    leaves, 12 features), saved by LightGBM 4.x with tree_sizes and its parameter block."""
    lgb = pytest.importorskip("lightgbm")
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(7)
    X = rng.normal(size=(400, 12))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 3]) > 0.5).astype(int) + (np.nan_to_num(X[:, 5]) > 1)
    ds = lgb.Dataset(X, y, group=[40] * 10, params={"verbose": -1})
    booster = lgb.train({"objective": "lambdarank", "num_leaves": 7, "min_data_in_leaf": 5,
                         "verbose": -1, "seed": 3, "num_threads": 1}, ds, num_boost_round=5)
    path = tmp_path_factory.mktemp("lgb") / "trained_lightgbm.txt"
    booster.save_model(str(path))
    return path
