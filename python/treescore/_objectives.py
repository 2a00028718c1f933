# _objectives.py: the training library's output transform (sigmoid, exp, softmax, ...) for a model's objective.
"""Which output transform ``predict`` applies, from the model's format and objective.

LightGBM computes its transforms in double (``ConvertOutput`` of each objective), XGBoost
in float32 from the float32 margin (``PredTransform``); the codes below name the C
implementations in ``_core.c`` (enum transform), which use the same libm as the
training libraries' own code.
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
_LGB_EXP = {"poisson", "gamma", "tweedie"}
_LGB_SIGMOID = {"binary", "cross_entropy", "xentropy"}

_XGB_SIGMOID = {"binary:logistic", "reg:logistic"}
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
        if name in ("regression", "regression_l2", "l2") and "sqrt" in words[1:]:
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
    return (NONE, 1.0)
