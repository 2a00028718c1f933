# test_demo_model.py: the demo model data/example/model.txt on rank.test through the SVMlight reader, bit-exact.
"""The bundled demo (scripts/train_demo_model.py writes data/example/model.txt).

rank.test is SVMlight without qid (query sizes in rank.test.query), feature id k is
column k, absent entries are 0.0 for a LightGBM model. The reference parses the file
with the test's own reader into a dense float64 matrix (LightGBM reads text as doubles,
and treescore scores text input as LightGBM scores those doubles) and asks LightGBM for
raw scores.
"""

import numpy as np
import pytest

import tshelpers as H

EXAMPLE = H.REPO / "data" / "example"
MODEL = EXAMPLE / "model.txt"
TEST = EXAMPLE / "rank.test"


def read_svmlight_f64(path, n_cols):
    """Dense float64 rows (absent = 0.0, feature id k -> column k) and labels."""
    rows, labels = [], []
    with open(path) as f:
        for line in f:
            parts = line.split("#", 1)[0].split()
            if not parts:
                continue
            labels.append(float(parts[0]))
            row = np.zeros(n_cols, dtype=np.float64)
            for tok in parts[1:]:
                k, v = tok.split(":", 1)
                if k != "qid" and int(k) < n_cols:
                    row[int(k)] = float(v)
            rows.append(row)
    return np.vstack(rows), np.asarray(labels)


def shift_ids(src, dst):
    """The same file with every feature id k written as k + 1 (the value text unchanged)."""
    with open(src) as f, open(dst, "w") as g:
        for line in f:
            body, hash_, comment = line.rstrip("\r\n").partition("#")
            parts = body.split()
            out = parts[:1] + [p if p.startswith("qid:") else f"{int(p.split(':')[0]) + 1}:{p.split(':', 1)[1]}"
                               for p in parts[1:]]
            g.write(" ".join(out) + (" #" + comment if hash_ else "") + "\n")


@pytest.fixture(scope="session")
def demo():
    import lightgbm as lgb
    if not MODEL.is_file():
        pytest.fail(f"{MODEL} is missing: run `.venv/bin/python scripts/train_demo_model.py`", pytrace=False)
    booster = lgb.Booster(model_file=str(MODEL))
    X, y = read_svmlight_f64(TEST, booster.num_feature())
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
        shift_ids(TEST, shifted)
    ours = H.score(MODEL, shifted, len(X), engine, "--format", "svmlight", "--one-based")
    H.assert_exact(ours, ref, X, None, f"demo model, ids + 1 with --one-based, engine {engine}")
