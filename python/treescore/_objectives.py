# _objectives.py: the training library's output transform (sigmoid, exp, softmax, ...) for a model's objective.
"""Which output transform ``predict`` applies, from the model's format and objective.

LightGBM computes its transforms in double (``ConvertOutput`` of each objective), XGBoost
in float32 from the float32 margin (``PredTransform``); the codes below name the C
implementations in ``_core.c`` (enum transform), which use the same libm as the
training libraries' own code. CatBoost's ``predict(prediction_type="Probability")``
(catboost/libs/eval_result/eval_helpers.cpp, PrepareEval; model/eval_processing.h) is
LightGBM's arithmetic: ``1. / (1. + exp(-x))`` in double (CalcSigmoid, libm's exp: the
same bits), and for MultiClass a softmax that subtracts the row's largest score, adds the
exponentials in class order and divides (CalcSoftmax; CatBoost's exponentials are its
FastExpInplace, which differs from libm's exp in the last bits: within 1e-14 relative).
"""

from __future__ import annotations

import re

NONE = 0
LGB_SIGMOID = 1
LGB_EXP = 2
LGB_SOFTMAX = 3
LGB_SQUARE = 4
LGB_LOG1PEXP = 5
XGB_SIGMOID = 6
XGB_EXP = 7
XGB_SOFTMAX = 8
XGB_ARGMAX = 9
XGB_HINGE = 10

_LGB_IDENTITY = {
    "regression", "regression_l2", "l2", "mean_squared_error", "mse", "regression_l1", "l1",
    "mean_absolute_error", "mae", "huber", "fair", "quantile", "mape", "lambdarank", "rank_xendcg",
    "xendcg", "custom", "none", "",
}
#: LightGBM's objectives derived from its L2 regression (RegressionL2loss): with reg_sqrt
#: their model line ends in " sqrt" and ConvertOutput squares back, sign(x) * x * x
#: (huber refuses reg_sqrt; poisson, gamma and tweedie override ConvertOutput with exp).
_LGB_SQRT_ABLE = {
    "regression", "regression_l2", "l2", "mean_squared_error", "mse", "regression_l1", "l1",
    "mean_absolute_error", "mae", "huber", "fair", "quantile", "mape",
}
_LGB_EXP = {"poisson", "gamma", "tweedie"}
_LGB_SIGMOID = {"binary", "cross_entropy", "xentropy"}

_XGB_SIGMOID = {"binary:logistic", "reg:logistic"}

#: CatBoost objectives whose Probability is the sigmoid of each score (one column: the
#: binary classifiers, two columns returned; several: one sigmoid per output).
_CB_SIGMOID_1 = {"Logloss", "CrossEntropy"}
_CB_SIGMOID_K = {"MultiLogloss", "MultiCrossEntropy", "MultiClassOneVsAll"}
#: CatBoost objectives whose prediction (CatBoostRegressor.predict, prediction_type
#: "Exponent") is exp of the score.
_CB_EXP = {"Poisson", "Tweedie"}
_XGB_EXP = {"count:poisson", "reg:gamma", "reg:tweedie", "survival:cox", "survival:aft"}


def lightgbm_objective_line(model_bytes: bytes) -> str:
    """The full ``objective=`` value of a LightGBM text model (or of its dump_model JSON),
    such as ``"binary sigmoid:1"``; "" when there is none."""
    head = model_bytes[:1 << 16]
    m = re.search(rb"^objective=([^\r\n]*)", head, re.M)
    if m is None:
        m = re.search(rb'"objective"\s*:\s*"([^"]*)"', head)
    return m.group(1).decode("utf-8", "replace").strip() if m else ""


def transform_for(fmt: str, objective: str, objective_line: str, n_outputs: int):
    """(code, parameter) of the output transform; code NONE for ranking, regression and
    objectives treescore does not know (their raw score is returned)."""
    if fmt.startswith("lightgbm"):
        words = objective_line.split() if objective_line else [objective]
        name = words[0] if words else ""
        params = dict(w.split(":", 1) for w in words[1:] if ":" in w)
        sigmoid = float(params.get("sigmoid", 1.0))  # ValueError when not a number
        if not sigmoid > 0 or sigmoid == float("inf"):
            raise ValueError(f"sigmoid must be a positive number, not {sigmoid}")
        if name in _LGB_SIGMOID:
            return (LGB_SIGMOID, sigmoid if name == "binary" else 1.0)
        if name in ("multiclassova", "multiclass_ova", "ova", "ovr"):
            return (LGB_SIGMOID, sigmoid)
        if name in ("multiclass", "softmax"):
            return (LGB_SOFTMAX if n_outputs > 1 else NONE, 1.0)
        if name in _LGB_EXP:
            return (LGB_EXP, 1.0)
        if name in ("cross_entropy_lambda", "xentlambda"):
            return (LGB_LOG1PEXP, 1.0)
        if name in _LGB_SQRT_ABLE and "sqrt" in words[1:]:
            return (LGB_SQUARE, 1.0)
        return (NONE, 1.0)
    if fmt.startswith("xgboost"):
        if objective in _XGB_SIGMOID:
            return (XGB_SIGMOID, 1.0)
        if objective in _XGB_EXP:
            return (XGB_EXP, 1.0)
        if objective == "multi:softprob":
            return (XGB_SOFTMAX if n_outputs > 1 else NONE, 1.0)
        if objective == "multi:softmax":
            return (XGB_ARGMAX if n_outputs > 1 else NONE, 1.0)
        if objective == "binary:hinge":
            return (XGB_HINGE, 1.0)
        return (NONE, 1.0)
    if fmt.startswith("catboost"):
        name = objective.split(":", 1)[0]  # "Logloss:border=0.5" names Logloss
        if name in _CB_SIGMOID_1 and n_outputs == 1:
            return (LGB_SIGMOID, 1.0)
        if name in _CB_SIGMOID_K and n_outputs > 1:
            return (LGB_SIGMOID, 1.0)
        if name == "MultiClass" and n_outputs > 1:
            return (LGB_SOFTMAX, 1.0)
        if name in _CB_EXP and n_outputs == 1:
            return (LGB_EXP, 1.0)
        return (NONE, 1.0)
    return (NONE, 1.0)


def catboost_two_columns(fmt: str, objective: str, n_outputs: int) -> bool:
    """Whether CatBoost's Probability of this model has two columns made from one score,
    [1 - p, p] (binary Logloss and CrossEntropy: CatBoost's Python package writes the
    probability of class 0 as ``1 - p``)."""
    return fmt.startswith("catboost") and n_outputs == 1 and objective.split(":", 1)[0] in _CB_SIGMOID_1


def catboost_variance(fmt: str, objective: str, n_outputs: int) -> bool:
    """Whether CatBoostRegressor.predict of this model is [mean, variance] from the two raw
    scores [mean, log of the standard deviation]: RMSEWithUncertainty, whose default
    prediction_type "RMSEWithUncertainty" writes exp(2 raw) as the second column."""
    return fmt.startswith("catboost") and n_outputs == 2 and objective.split(":", 1)[0] == "RMSEWithUncertainty"


# ---- ONNX-ML tree ensembles: post_transform as ONNX Runtime applies it ---------------------------
#
# The C loader (src/io/model_onnx.c) records the tree node's post_transform in the model's
# objective: "onnx post_transform=NAME", with " binary" or " binary_positive" when the model
# is a two-class classifier with one score column (class 0's weights only). ONNX Runtime
# (onnxruntime/core/providers/cpu/ml/ml_common.h, write_scores; tree_ensemble_aggregator.h)
# then writes, per row, from the raw scores s (checked against ONNX Runtime 1.32 by
# tests/conformance/test_onnx.py::test_onnx_predict_post_transform):
#   one score column of a regressor: PROBIT -> probit(s); every other transform is ignored;
#   one column of a binary classifier: LOGISTIC -> [sigmoid(-s), sigmoid(s)]; NONE, SOFTMAX,
#     SOFTMAX_ZERO -> [1 - s, s] when every weight is >= 0, else [-s, s]; PROBIT: ONNX
#     Runtime writes an undefined second column, refused;
#   two or more columns: LOGISTIC per score, SOFTMAX and SOFTMAX_ZERO per row, PROBIT per
#     score. ONNX Runtime computes them in float32; these are the same formulas in float64.

def onnx_post_transform(objective: str):
    """A function raw scores (n,) or (n, K) -> ONNX Runtime's output for an ONNX model's
    objective string, or None when it is not one."""
    words = objective.split()
    if not words or words[0] != "onnx":
        return None
    kv = dict(w.split("=", 1) for w in words[1:] if "=" in w)
    post = kv.get("post_transform", "NONE")
    binary = "binary" in words[1:] or "binary_positive" in words[1:]
    positive = "binary_positive" in words[1:]
    if post not in ("NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT"):
        raise ValueError(f"post_transform {post} is unknown")

    def apply(y):
        import numpy as np
        y = np.asarray(y, dtype=np.float64)
        if y.ndim == 1:
            if binary:
                if post == "LOGISTIC":
                    return np.stack([_logistic(-y), _logistic(y)], axis=1)
                if post == "PROBIT":
                    raise ValueError("post_transform PROBIT of a one-column binary classifier: ONNX Runtime's "
                                     "output is not defined; use raw_score=True")
                return np.stack([1.0 - y if positive else -y, y], axis=1)
            return _probit(y) if post == "PROBIT" else y
        if post == "LOGISTIC":
            return _logistic(y)
        if post == "SOFTMAX":
            e = np.exp(y - y.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)
        if post == "SOFTMAX_ZERO":
            m = y.max(axis=1, keepdims=True)
            nz = np.abs(y) > 1e-7
            e = np.where(nz, np.exp(y - m), y * np.exp(-m))
            return e / np.where(nz, e, 0.0).sum(axis=1, keepdims=True)
        if post == "PROBIT":
            return _probit(y)
        return y

    return apply


def _logistic(v):
    import numpy as np
    e = 1.0 / (1.0 + np.exp(-np.abs(v)))
    return np.where(v < 0, 1.0 - e, e)


def _probit(v):
    """ONNX Runtime's ComputeProbit: sqrt(2) * ErfInv(2 v - 1) with its approximation of ErfInv."""
    import numpy as np
    x = 2.0 * v - 1.0
    sgn = np.where(x < 0, -1.0, 1.0)
    x = (1.0 - x) * (1.0 + x)
    with np.errstate(divide="ignore", invalid="ignore"):
        lg = np.log(x)
        a = 2.0 / (3.14159 * 0.147) + 0.5 * lg
        b = 1.0 / 0.147 * lg
        return 1.41421356 * sgn * np.sqrt(-a + np.sqrt(a * a - b))
