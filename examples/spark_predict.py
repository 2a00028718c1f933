# spark_predict.py: score a Spark DataFrame with treescore through mapInPandas, in local mode (make test-spark).
"""Scale-out example: the treescore.Model travels to Spark's Python workers pickled (its
model bytes and options; each worker prepares the engine again) and scores each Arrow
batch of rows as a pandas DataFrame.

    pip install ".[spark]"                                    # from the repository: treescore, pyspark, pandas, pyarrow
    python examples/spark_predict.py data/example/model.txt

Needs Java 17+ besides (Debian: openjdk-17-jre-headless); `make test-spark` installs
pyspark into .venv and runs it. With no argument it trains a small LightGBM model first
(needs `pip install lightgbm`). The result is checked against the in-process
``m.predict`` of the whole frame; exit status 0 when they are equal.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pandas as pd


def score_columns(model) -> list:
    """The score columns: "score", or score_0 .. score_{K-1} for a model with K > 1 outputs
    (multiclass, multi-target: model.predict gives an (n, K) array)."""
    k = model.num_outputs
    return ["score"] if k == 1 else [f"score_{j}" for j in range(k)]


def score_batch(model, pdf: pd.DataFrame, features, columns) -> pd.DataFrame:
    """One batch of rows as pandas: its row_id and its score columns."""
    scores = np.asarray(model.predict(pdf[features])).reshape(len(pdf), len(columns))
    out = pd.DataFrame(scores, columns=columns)
    out.insert(0, "row_id", pdf["row_id"].to_numpy())
    return out


def score_spark(model, sdf, features):
    """A Spark DataFrame of (row_id, score columns): `sdf` must have a `row_id` column and
    the `features` columns."""
    columns = score_columns(model)

    def score_batches(batches):
        for pdf in batches:
            yield score_batch(model, pdf, features, columns)

    return sdf.mapInPandas(score_batches, schema="row_id long, " + ", ".join(f"{c} double" for c in columns))


def run(model, frame: pd.DataFrame) -> np.ndarray:
    """Scores `frame` with Spark in local mode (2 cores); returns the scores in row order
    (n, or n x K for a model with K > 1 outputs, as model.predict)."""
    from pyspark.sql import SparkSession

    # the workers run this interpreter (the one treescore is installed in), not `python3`
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[2]").appName("treescore-spark-example")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false").config("spark.sql.execution.arrow.pyspark.enabled", "true")
             .config("spark.sql.shuffle.partitions", "4").getOrCreate())
    try:
        features = list(frame.columns)
        sdf = spark.createDataFrame(frame.assign(row_id=np.arange(len(frame), dtype=np.int64))).repartition(4)
        out = score_spark(model, sdf, features).toPandas().sort_values("row_id")
        scores = out[score_columns(model)].to_numpy()
        return scores[:, 0] if scores.shape[1] == 1 else scores
    finally:
        spark.stop()


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
        names = model.feature_names or [f"c{i}" for i in range(model.num_features)]
        frame = pd.DataFrame(np.random.default_rng(1).normal(size=(10000, model.num_features)), columns=names)
    else:
        model, frame = _demo_model()
    dist = run(model, frame)
    local = model.predict(frame)
    same = len(dist) == len(local) and np.array_equal(dist, local)
    print(f"spark: {len(dist)} rows scored with mapInPandas (local[2]); equal to the in-process scores: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
