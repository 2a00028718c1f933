# dask_predict.py: score a Dask DataFrame with treescore on a LocalCluster of worker processes (map_partitions).
"""Scale-out example: a treescore.Model is pickled to each Dask worker (its model bytes and
options; each worker prepares the engine once) and scores its partitions.

    pip install ".[dask]"                                    # from the repository: treescore, dask, distributed, pandas, pyarrow
    python examples/dask_predict.py data/example/model.txt   # about 10 s

MODEL_FILE is any model treescore reads; the rows are random, one column per feature of
the model (named as the model names them); a model with K > 1 outputs (multiclass) gives
K score columns. With no argument it trains a small LightGBM
model first (needs `pip install lightgbm`). The result is checked against the in-process
``m.predict`` of the whole frame; exit status 0 when they are equal. `make test` runs it
(its "examples" stage).
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd


def score_part(part: pd.DataFrame, m, columns):
    """One partition's scores: a Series, or a DataFrame of K columns for a model with K > 1
    scores per row (multiclass, multi-target: m.predict gives an (n, K) array)."""
    scores = m.predict(part)
    if columns is None:
        return pd.Series(scores, index=part.index, name="score")
    return pd.DataFrame(np.asarray(scores).reshape(len(part), len(columns)), index=part.index, columns=columns)


def run(model, frame: pd.DataFrame, n_workers: int = 2, npartitions: int = 4) -> np.ndarray:
    """Scores `frame` on a LocalCluster of `n_workers` worker processes; returns the scores
    (n rows, or n x K for a model with K > 1 outputs, as model.predict)."""
    import dask.dataframe as dd
    from dask.distributed import Client, LocalCluster

    k = model.num_outputs
    columns = None if k == 1 else [f"score_{j}" for j in range(k)]
    meta = ("score", "f8") if columns is None else pd.DataFrame({c: pd.Series(dtype="f8") for c in columns})
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        ddf = dd.from_pandas(frame, npartitions=npartitions)
        remote = client.scatter(model, broadcast=True)  # ship the model once per worker
        scores = ddf.map_partitions(score_part, remote, columns, meta=meta)
        return scores.compute().to_numpy()


def _demo_model():
    import lightgbm as lgb
    import treescore

    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 6))
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(float)
    names = [f"x{i}" for i in range(6)]
    booster = lgb.train(dict(objective="binary", num_leaves=15, verbose=-1), lgb.Dataset(X, y, feature_name=names), 50)
    return treescore.Model.from_booster(booster, threads=1), pd.DataFrame(rng.normal(size=(10000, 6)), columns=names)


def main(argv) -> int:
    import treescore

    if len(argv) > 1:
        model = treescore.Model(model_file=argv[1], threads=1)
        # at most about 8 MB of rows: the frame travels in the task graph (dask warns above 10 MB)
        rows = max(1000, min(10000, 1_000_000 // max(1, model.num_features)))
        frame = pd.DataFrame(np.random.default_rng(1).normal(size=(rows, model.num_features)),
                             columns=model.feature_names)
    else:
        model, frame = _demo_model()
    dist = run(model, frame)
    local = model.predict(frame)
    same = np.array_equal(dist, local)
    print(f"dask: {len(dist)} rows scored on 2 worker processes; equal to the in-process scores: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
