#!/usr/bin/env python3
# make_model.py: makes a LightGBM lambdarank benchmark model of exactly N trees x L leaves plus a raw float32 test set.
"""Benchmark model generator.

    bench/make_model.py --trees N --leaves L [--features 136] [--rows 20000]
                        [--test-rows 10000] [--seed 1] [--threads 2] [--out DIR] [--force]

Writes into DIR (default bench/.cache/lgb_{N}x{L}/, or lgb_{N}x{L}_f{F} when
--features is not 136):
    model.txt       LightGBM text model: exactly N trees, each with exactly L leaves
    test.f32        scoring rows, treescore's raw float32 format (TSRAWF32)
    reference.txt   LightGBM's raw score of every test row ("%.17g", one per line)
    info.json       parameters, sizes, library versions and timings

Nothing is done when all four files exist (use --force to rebuild).

The data comes from bench/letor_gen.py (the generator the conformance tests use):
MSLR-like, 136 features by default, count-like and heavy-tailed columns, grades 0-4,
queries of 100-1,000 documents, missing values in 20% of the features, one constant-0
feature. Every tree is forced to grow to L leaves: tiny min_data_in_leaf and
min_sum_hessian_in_leaf, no gain threshold, a small learning rate (so the gradients
never run out), enough rows; the script checks the result and fails if any tree is
smaller.

Cost: 1,000 trees x 64 leaves took 3 min 28 s on the 2-core build machine while other
jobs were running (about 0.2 s per tree; 2 LightGBM threads suffer badly from CPU
oversubscription, --threads 1 was 3x faster per tree under that load).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import letor_gen  # noqa: E402

OUTPUTS = ("model.txt", "test.f32", "reference.txt", "info.json")


def params_for(leaves: int, seed: int, threads: int = 2) -> dict:
    return dict(objective="lambdarank", num_leaves=leaves, learning_rate=0.02, min_data_in_leaf=2,
                min_sum_hessian_in_leaf=1e-12, min_gain_to_split=0.0, lambda_l2=0.0, max_depth=-1,
                max_bin=255, deterministic=True, force_row_wise=True, num_threads=threads, seed=seed,
                verbose=-1)


def main() -> int:
    ap = argparse.ArgumentParser(description="Make a LightGBM benchmark model of exactly N trees x L leaves.")
    ap.add_argument("--trees", type=int, required=True)
    ap.add_argument("--leaves", type=int, required=True)
    ap.add_argument("--features", type=int, default=136)
    ap.add_argument("--rows", type=int, default=20000, help="training rows (default 20000)")
    ap.add_argument("--test-rows", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2,
                    help="LightGBM threads (default 2; part of the model's recipe: another count may "
                         "give slightly different trees; on a busy 2-core machine 1 is much faster)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--force", action="store_true", help="rebuild even when the files exist")
    a = ap.parse_args()
    if a.trees < 1 or a.leaves < 2 or a.features < 2:
        ap.error("need --trees >= 1, --leaves >= 2, --features >= 2")
    if a.rows < 2 * a.leaves * 2:
        ap.error(f"--rows {a.rows} is too small for {a.leaves} leaves per tree")

    name = f"lgb_{a.trees}x{a.leaves}" + ("" if a.features == 136 else f"_f{a.features}")
    out = a.out if a.out is not None else HERE / ".cache" / name
    if a.out is None:
        # bench/.cache holds generated files only: keep git from ever seeing them.
        (HERE / ".cache").mkdir(parents=True, exist_ok=True)
        (HERE / ".cache" / ".gitignore").write_text("*\n")
    if not a.force and all((out / f).exists() for f in OUTPUTS):
        print(f"{out}: up to date (use --force to rebuild)")
        return 0
    out.mkdir(parents=True, exist_ok=True)

    import lightgbm as lgb

    t0 = time.perf_counter()
    train = letor_gen.make_letor(n_rows=a.rows, n_features=a.features, qmin=100, qmax=1000, seed=a.seed)
    test = letor_gen.make_letor(n_rows=a.test_rows, n_features=a.features, qmin=100, qmax=1000,
                                seed=a.seed + 1000)
    t_data = time.perf_counter() - t0

    params = params_for(a.leaves, a.seed, a.threads)
    ds = lgb.Dataset(train.X, label=train.y, group=train.groups, params={"verbose": -1})
    t0 = time.perf_counter()
    booster = lgb.train(params, ds, num_boost_round=a.trees)
    t_train = time.perf_counter() - t0

    tmp = out / "model.txt.tmp"
    booster.save_model(str(tmp))
    saved = lgb.Booster(model_file=str(tmp))
    dump = saved.dump_model()["tree_info"]
    sizes = [t["num_leaves"] for t in dump]
    if len(sizes) != a.trees or min(sizes) != a.leaves or max(sizes) != a.leaves:
        tmp.unlink()
        print(f"error: got {len(sizes)} trees with {min(sizes)}..{max(sizes)} leaves, wanted "
              f"{a.trees} x {a.leaves}; try more --rows", file=sys.stderr)
        return 1
    tmp.replace(out / "model.txt")

    letor_gen.write_raw(out / "test.f32", test.X)
    t0 = time.perf_counter()
    ref = saved.predict(test.X, raw_score=True, num_threads=2)
    t_pred = time.perf_counter() - t0
    with open(out / "reference.txt", "w") as f:
        f.writelines("%.17g\n" % v for v in ref)

    info = dict(trees=a.trees, leaves=a.leaves, features=a.features, train_rows=a.rows,
                test_rows=a.test_rows, seed=a.seed, params=params, lightgbm=lgb.__version__,
                numpy=np.__version__, generator_version=letor_gen.GENERATOR_VERSION,
                seconds=dict(data=round(t_data, 2), train=round(t_train, 2), lightgbm_predict=round(t_pred, 3)))
    (out / "info.json").write_text(json.dumps(info, indent=2) + "\n")
    print(f"wrote {out}: {a.trees} trees x {a.leaves} leaves, {a.features} features, "
          f"{a.test_rows} test rows; data {t_data:.1f}s, training {t_train:.1f}s, "
          f"LightGBM predict {t_pred * 1e3:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
