# test_demo_model.py: the demo model data/example/model.txt on rank.test through the SVMlight reader, bit-exact.
"""The bundled demo (scripts/train_demo_model.py writes data/example/model.txt).

rank.test is SVMlight without qid (query sizes in rank.test.query), feature id k is
column k, absent entries are 0.0 for a LightGBM model. The reference parses the file
with the test's own reader into a dense float32 matrix and asks LightGBM for raw scores.
"""

import numpy as np
import pytest

import tshelpers as H

EXAMPLE = H.REPO / "data" / "example"
MODEL = EXAMPLE / "model.txt"
TEST = EXAMPLE / "rank.test"


@pytest.fixture(scope="session")
def demo():
    import lightgbm as lgb
    if not MODEL.is_file():
        pytest.fail(f"{MODEL} is missing: run `.venv/bin/python scripts/train_demo_model.py`", pytrace=False)
    booster = lgb.Booster(model_file=str(MODEL))
    X, y = H.read_svmlight_dense(TEST, booster.num_feature(), absent=0.0)
    ref = np.asarray(booster.predict(X, raw_score=True), dtype=np.float64)
    return dict(X=X, y=y, ref=ref, n_features=booster.num_feature())


def test_demo_model_svmlight(engine, demo):
    X, ref = demo["X"], demo["ref"]
    ours = H.score(MODEL, TEST, len(X), engine)
    H.assert_exact(ours, ref, X, None, f"demo model on rank.test (auto format), engine {engine}")
    ours = H.score(MODEL, TEST, len(X), engine, "--format", "svmlight",
                   "--query-file", EXAMPLE / "rank.test.query")
    H.assert_exact(ours, ref, X, None, f"demo model on rank.test --format svmlight --query-file, engine {engine}")


def test_demo_model_one_based(engine, demo, workdir):
    """--one-based: id k goes to column k-1, so ids shifted by one give the same scores."""
    X, ref = demo["X"], demo["ref"]
    shifted = workdir / "rank.test.onebased"
    if not shifted.exists():
        H.write_svmlight(shifted, X, demo["y"], present=X != 0, one_based=True)
    ours = H.score(MODEL, shifted, len(X), engine, "--format", "svmlight", "--one-based")
    H.assert_exact(ours, ref, X, None, f"demo model, ids + 1 with --one-based, engine {engine}")
