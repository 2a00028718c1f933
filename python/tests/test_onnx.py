# test_onnx.py: treescore.Model on ONNX-ML tree ensembles: predict (post_transform as ONNX Runtime applies it) and raw_score against ONNX Runtime and the exact sum.
"""The models of tests/conformance/test_onnx.py (skl2onnx, onnxmltools, hand-made opset 3
and 5), and hand-made ones for every post_transform: raw_score=True equals the exact
double sum of the model's leaves bit for bit (the mean for AVERAGE: the sum divided
once); predict equals ONNX Runtime 1.32's output (probabilities of classifiers, scores of
regressors) within its float32 arithmetic."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import helper  # noqa: E402

import treescore  # noqa: E402

CONF = Path(__file__).resolve().parents[2] / "tests" / "conformance"
sys.path.insert(0, str(CONF))
_spec = importlib.util.spec_from_file_location("onnx_conformance", CONF / "test_onnx.py")
OC = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(OC)


def _ort_output(m, X):
    """The model's score output as ONNX Runtime computes it (probabilities for classifiers)."""
    s = OC._session(m.SerializeToString())
    outs = s.get_outputs()
    i = 1 if len(outs) > 1 else 0
    xin = s.get_inputs()[0]
    Xin = X.astype(np.float64 if "double" in xin.type else np.float32)
    y = s.run([outs[i].name], {xin.name: Xin})[0]
    if isinstance(y, list):  # ZipMap: a list of {label: probability}
        y = np.array([[d[k] for k in sorted(d)] for d in y])
    return np.asarray(y, dtype=np.float64)


def _member_rows(ens, X):
    keep = np.ones(len(X), bool)
    for f in {int(ens.feat[i]) for i in ens.members}:
        keep &= np.isnan(X[:, f]) | (X[:, f] == np.round(X[:, f]))
    return keep


def _check(m, name):
    ens = OC.Ens(m)
    X = OC.rows_for(ens)
    exact, mag = ens.exact(X)
    model = treescore.Model(model_str=m.SerializeToString())
    assert model.model_format == "onnx"
    raw = model.predict(X, raw_score=True)
    want = exact / len(ens.roots) if ens.agg == "AVERAGE" else exact
    np.testing.assert_array_equal(np.asarray(raw).reshape(want.shape), want, err_msg=f"{name}: raw_score")
    y = model.predict(X)
    ref = _ort_output(m, X)
    keep = _member_rows(ens, X)
    y = np.asarray(y).reshape(len(X), -1)[keep]
    ref = ref.reshape(len(X), -1)[keep]
    assert y.shape == ref.shape, f"{name}: predict shape {y.shape}, ONNX Runtime {ref.shape}"
    # ONNX Runtime sums and transforms in float32: its raw scores are within the bound of
    # test_onnx.py; the transforms (sigmoid, softmax: Lipschitz <= 1) add a few float ulps
    scale = np.max(mag[keep]) if keep.any() else 1.0
    # (ONNX Runtime's float32 probit approximation: a few more)
    tol = OC.U * (len(ens.roots) + 4) * scale + 2e-6 * np.maximum(1.0, np.abs(ref))
    tol = float(np.nanmax(tol)) if np.isfinite(tol).any() else 1e-5
    np.testing.assert_allclose(y, ref, rtol=0, atol=tol, equal_nan=True, err_msg=f"{name}: predict")


@pytest.mark.parametrize("name", sorted(OC.CASES))
def test_onnx_predict(name):
    m = OC.case(name)[0]
    _check(m, name)


def _with_post(m, post):
    m2 = onnx.ModelProto()
    m2.CopyFrom(m)
    node = [n for n in m2.graph.node if n.op_type.startswith("TreeEnsemble")][0]
    for a in node.attribute:
        if a.name == "post_transform":
            if a.type == onnx.AttributeProto.INT:
                # ONNX Runtime's numbering (the spec swaps 1 and 2; see model_onnx.c)
                a.i = ["NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT"].index(post)
            else:
                a.s = post.encode()
    return m2


def _binary(weights, post, base=None):
    T = onnx.TensorProto
    attrs = dict(nodes_treeids=[0, 0, 0, 1, 1, 1], nodes_nodeids=[0, 1, 2, 0, 1, 2],
                 nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"] * 2, nodes_featureids=[0, 0, 0, 1, 0, 0],
                 nodes_values=[0.0, 0, 0, 0.5, 0, 0], nodes_truenodeids=[1, 0, 0, 1, 0, 0],
                 nodes_falsenodeids=[2, 0, 0, 2, 0, 0], class_treeids=[0, 0, 1, 1], class_nodeids=[1, 2, 1, 2],
                 class_ids=[0, 0, 0, 0], class_weights=weights, classlabels_int64s=[0, 1], post_transform=post)
    if base is not None:
        attrs["base_values"] = base
    g = helper.make_graph([helper.make_node("TreeEnsembleClassifier", ["X"], ["L", "P"], domain="ai.onnx.ml",
                                            **attrs)], "g",
                          [helper.make_tensor_value_info("X", T.FLOAT, [None, OC.N_FEATURES])],
                          [helper.make_tensor_value_info("L", T.INT64, [None]),
                           helper.make_tensor_value_info("P", T.FLOAT, [None, 2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("post", ["NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO"])
@pytest.mark.parametrize("weights", [[0.3, 0.8, 0.0, 0.125], [-0.4, 0.7, 0.2, -0.1]])
@pytest.mark.parametrize("base", [None, [0.1]])
def test_onnx_post_transform_binary(post, weights, base):
    _check(_binary(weights, post, base), f"binary {post} {weights} {base}")


def test_onnx_binary_probit_refused():
    m = treescore.Model(model_str=_binary([0.3, 0.8, 0.1, 0.2], "PROBIT").SerializeToString())
    with pytest.raises(treescore.Error, match="PROBIT"):
        m.predict(np.zeros((2, OC.N_FEATURES), np.float32))
    assert m.predict(np.zeros((2, OC.N_FEATURES), np.float32), raw_score=True).shape == (2,)


@pytest.mark.parametrize("post", ["NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT"])
def test_onnx_post_transform_two_targets(post):
    _check(_with_post(OC._v3_modes_model("SUM"), post), f"two targets {post}")
    _check(_with_post(OC._v5_model(1, 2), post), f"v5 two targets {post}")


@pytest.mark.parametrize("post", ["NONE", "LOGISTIC", "PROBIT"])
def test_onnx_post_transform_one_target(post):
    """One score column: ONNX Runtime applies PROBIT only."""
    _check(_with_post(OC._v5_model(1, 1), post), f"one target {post}")
