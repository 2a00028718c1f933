# test_multiclass.py: multiclass and multi-target models give K scores per row, exact in every engine; rank refuses them.
"""Multiclass and multi-output models (issue 13, part 6).

`treescore score` prints K tab-separated scores per row (row-major, class order):
- LightGBM multiclass / multiclassova (num_class = num_tree_per_iteration = K; tree t
  belongs to class t % K): predict(raw_score=True) bit for bit, float32 and double rows;
- XGBoost multi:softprob and multi:softmax (num_class K), and multi-target regression
  (num_target K, one output per tree): tree t adds to output tree_info[t], base_score
  holds one margin per output; the same leaves as pred_leaf and XGBoost's margin
  (predict output_margin) within its float32 rounding.
The same models as LightGBM JSON (dump_model) and XGBoost UBJSON score the same.
Vector-leaf trees (multi_strategy="multi_output_tree") are refused with a precise message,
and `treescore rank` refuses K > 1. `treescore info` reports K.
"""

import numpy as np
import pytest

import catmc as C
import tshelpers as H


def rows():
    X = C.score_rows(seed=21, n=800)
    X[:5, 0] = [np.nan, -np.inf, np.inf, 0.0, 1e-40]
    return X


@pytest.mark.parametrize("objective", ["multiclass", "multiclassova"])
def test_lightgbm_multiclass(engine, workdir, objective):
    X, y = C.train_rows()
    path, b = C.lgb_model(f"mc-{objective}", dict(objective=objective, num_class=4, num_leaves=7), 10, X,
                          C.class_labels(y, 4))
    C.check_lightgbm(path, b, rows(), engine, workdir, 4)


@pytest.mark.parametrize("objective", ["multi:softprob", "multi:softmax"])
def test_xgboost_multiclass(engine, workdir, objective):
    X, y = C.train_rows()
    path, b = C.xgb_model(f"mc-{objective}", dict(objective=objective, num_class=3, max_depth=4), 8, X,
                          C.class_labels(y, 3))
    C.check_xgboost(path, b, rows(), engine, workdir, 3, C.xgb_base(path, 3))


def test_xgboost_multi_target(engine, workdir):
    X, y = C.train_rows()
    Y = np.stack([y, 2 * y - 1, np.nan_to_num(X[:, 1])], axis=1)
    path, b = C.xgb_model("mt-reg", dict(objective="reg:squarederror", max_depth=4), 8, X, Y)
    C.check_xgboost(path, b, rows(), engine, workdir, 3, C.xgb_base(path, 3))


def test_other_formats(engine, workdir):
    """The same multiclass models as LightGBM JSON (dump_model) and XGBoost UBJSON."""
    X, y = C.train_rows()
    path, b = C.lgb_model("mc-multiclass", dict(objective="multiclass", num_class=4, num_leaves=7), 10, X,
                          C.class_labels(y, 4))
    C.check_lightgbm(C.lightgbm_json(path, b, workdir), b, rows()[:300], engine, workdir, 4)
    path, b = C.xgb_model("mc-multi:softprob", dict(objective="multi:softprob", num_class=3, max_depth=4), 8, X,
                          C.class_labels(y, 3))
    C.check_xgboost(path, b, rows()[:300], engine, workdir, 3, C.xgb_base(path, 3),
                    model_file=C.xgboost_ubj(path, b, workdir))


def test_xgboost_vector_leaves_refused(workdir):
    X, y = C.train_rows()
    Y = np.stack([y, 2 * y - 1], axis=1)
    path, _ = C.xgb_model("mt-vector", dict(objective="reg:squarederror", max_depth=3,
                                            multi_strategy="multi_output_tree"), 3, X, Y)
    raw = workdir / "mt-vector.f32"
    C.write_raw(raw, rows()[:20])
    p = H.run_cli(["score", "-m", path, "-d", raw, "--format", "raw"])
    assert p.returncode > 0 and "multi_output_tree" in p.stderr, p.stderr


def test_info_and_rank(workdir):
    X, y = C.train_rows()
    path, _ = C.lgb_model("mc-multiclass", dict(objective="multiclass", num_class=4, num_leaves=7), 10, X,
                          C.class_labels(y, 4))
    p = H.run_cli(["info", "-m", path])
    assert p.returncode == 0 and "outputs:          4 scores per row" in p.stdout, p.stdout + p.stderr
    svm = workdir / "mc.svm"
    H.write_svmlight(svm, np.nan_to_num(rows()[:40]), np.zeros(40), qid=np.repeat([1, 2], 20))
    p = H.run_cli(["rank", "-m", path, "-d", svm])
    assert p.returncode > 0 and "4 scores per row" in p.stderr and "treescore score" in p.stderr, p.stderr


def test_bench_checks_every_output(workdir):
    X, y = C.train_rows()
    path, _ = C.xgb_model("mc-multi:softprob", dict(objective="multi:softprob", num_class=3, max_depth=4), 8, X,
                          C.class_labels(y, 3))
    raw = workdir / "mc-bench.f32"
    C.write_raw(raw, rows()[:300])
    p = H.run_cli(["bench", "-m", path, "-d", raw, "--data-format", "raw", "--engines", "naive,qs,vpred",
                   "--repeat", "1"])
    assert p.returncode == 0, p.stderr


def test_lightgbm_partial_iteration_refused(workdir):
    """A multiclass LightGBM model whose last iteration lacks trees (a file cut or edited
    without its tree_sizes line): LightGBM loads it and silently scores only the whole
    iterations (num_iteration_for_pred = trees / K), treescore added the extra trees to
    their classes: scores differed by up to 0.09 with no message. Refused now, in both
    formats, naming the counts."""
    import json
    X, y = C.train_rows()
    path, b = C.lgb_model("mc-multiclass", dict(objective="multiclass", num_class=4, num_leaves=7), 10, X,
                          C.class_labels(y, 4))
    head, rest = path.read_text().split("\nTree=0\n", 1)
    head = "\n".join(line for line in head.split("\n") if not line.startswith("tree_sizes="))
    blocks = ("Tree=0\n" + rest).split("\n\n\n")
    assert blocks[39].startswith("Tree=39") and blocks[40].startswith("end of trees")
    cut = workdir / "mc-cut.txt"
    cut.write_text(head + "\n" + "\n\n\n".join(blocks[:38] + blocks[40:]))
    dump = b.dump_model()
    dump["tree_info"] = dump["tree_info"][:38]
    cut_json = workdir / "mc-cut.json"
    cut_json.write_text(json.dumps(dump))
    for model in (cut, cut_json):
        p = H.run_cli(["info", "-m", model])
        assert p.returncode == 1 and "38 trees" in p.stderr and "4 trees" in p.stderr, p.stderr
        assert "whole number of iterations" in p.stderr, p.stderr
