#!/usr/bin/env python3
# train_demo_model.py: trains the demo LightGBM lambdarank model data/example/model.txt on data/example/rank.train.
"""Train the demo model of `make demo`.

Input:  data/example/rank.train (SVMlight `label id:v ...`, no qid) and
        data/example/rank.train.query (query sizes, one per line); the same for rank.test.
Output: data/example/model.txt (LightGBM text model), then NDCG@10 on rank.test.

The files are read by the small parser below into a dense float32 matrix: feature id k
is column k (as LightGBM and XGBoost read LETOR files, so column 0 is empty here: ids
start at 1), absent entries are 0.0. float32 because that is what treescore scores: the
trees' thresholds then come from float32 values, and LightGBM's prediction on the same
float32 rows is exactly what `treescore score` must return.

Parameters (LightGBM 4.7.0, numpy 2.4.6, Python 3.11):
    objective=lambdarank, num_boost_round=300, num_leaves=31, learning_rate=0.05,
    min_data_in_leaf=20, deterministic=True, force_row_wise=True, num_threads=1, seed=7
    (all other parameters are LightGBM's defaults: max_bin=255, lambdarank_truncation_level=30,
    label_gain=2^i-1, ...)

NDCG@10 uses LightGBM's convention: gain 2^label - 1, discount 1/log2(rank + 1) with
rank 1-based, documents with equal scores in file order, and a query whose labels are
all 0 counts as NDCG 1. The script also prints LightGBM's own ndcg@10 on rank.test,
which must agree.

Usage: .venv/bin/python scripts/train_demo_model.py [--out data/example/model.txt]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "data" / "example"

PARAMS = dict(objective="lambdarank", num_leaves=31, learning_rate=0.05, min_data_in_leaf=20,
              deterministic=True, force_row_wise=True, num_threads=1, seed=7, verbose=-1)
NUM_ROUNDS = 300


def read_svmlight(path: Path):
    """(labels float64, dict-of-rows) where each row is a list of (id, float32 value)."""
    labels, rows = [], []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            try:
                labels.append(float(parts[0]))
                row = []
                for tok in parts[1:]:
                    k, v = tok.split(":", 1)
                    if k == "qid":
                        continue
                    row.append((int(k), np.float32(float(v))))
            except ValueError as e:
                sys.exit(f"{path}:{lineno}: bad SVMlight line: {e}")
            rows.append(row)
    return np.asarray(labels), rows


def dense(rows, n_cols: int) -> np.ndarray:
    """Dense float32 matrix, id k -> column k, absent = 0.0; ids >= n_cols are dropped."""
    X = np.zeros((len(rows), n_cols), dtype=np.float32)
    for i, row in enumerate(rows):
        for k, v in row:
            if k < n_cols:
                X[i, k] = v
    return X


def read_groups(path: Path, n_rows: int) -> np.ndarray:
    g = np.loadtxt(path, dtype=np.int64, ndmin=1)
    if g.sum() != n_rows:
        sys.exit(f"{path}: query sizes add up to {g.sum()}, the data has {n_rows} rows")
    return g


def ndcg_at(scores: np.ndarray, labels: np.ndarray, groups: np.ndarray, k: int = 10) -> float:
    """Mean NDCG@k over queries, LightGBM's convention (see the module docstring)."""
    disc = 1.0 / np.log2(np.arange(2, k + 2))
    total, start = 0.0, 0
    for size in groups:
        s, y = scores[start:start + size], labels[start:start + size]
        start += size
        gain = 2.0 ** y - 1.0
        ideal = np.sort(gain)[::-1][:k]
        idcg = float(np.sum(ideal * disc[:ideal.size]))
        if idcg <= 0.0:
            total += 1.0
            continue
        order = np.argsort(-s, kind="stable")[:k]
        total += float(np.sum(gain[order] * disc[:order.size])) / idcg
    return total / len(groups)


def main() -> int:
    import lightgbm as lgb

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=EXAMPLE / "model.txt")
    args = ap.parse_args()

    y_tr, rows_tr = read_svmlight(EXAMPLE / "rank.train")
    y_te, rows_te = read_svmlight(EXAMPLE / "rank.test")
    n_cols = 1 + max(k for row in rows_tr for k, _ in row)
    X_tr, X_te = dense(rows_tr, n_cols), dense(rows_te, n_cols)
    g_tr = read_groups(EXAMPLE / "rank.train.query", len(y_tr))
    g_te = read_groups(EXAMPLE / "rank.test.query", len(y_te))

    train = lgb.Dataset(X_tr, label=y_tr, group=g_tr, params={"verbose": -1})
    valid = lgb.Dataset(X_te, label=y_te, group=g_te, reference=train)
    evals: dict = {}
    params = dict(PARAMS, metric="ndcg", eval_at=[10])
    booster = lgb.train(params, train, num_boost_round=NUM_ROUNDS, valid_sets=[valid],
                        valid_names=["test"], callbacks=[lgb.record_evaluation(evals)])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    booster.save_model(str(args.out))

    saved = lgb.Booster(model_file=str(args.out))
    scores = saved.predict(X_te, raw_score=True)
    ours = ndcg_at(scores, y_te, g_te, 10)
    theirs = evals["test"]["ndcg@10"][-1]
    print(f"wrote {args.out}: {saved.num_trees()} trees, {saved.num_feature()} features "
          f"(lightgbm {lgb.__version__}, numpy {np.__version__})")
    print(f"NDCG@10 on rank.test: {ours:.6f} (LightGBM's own: {theirs:.6f})")
    if abs(ours - theirs) > 1e-6:
        print("warning: the two NDCG@10 values differ", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
