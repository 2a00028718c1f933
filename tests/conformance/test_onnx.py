# test_onnx.py: ONNX-ML tree ensembles (skl2onnx, onnxmltools, hand-made opset-5 TreeEnsemble) against ONNX Runtime and an exact sum of the model's own leaves.
"""ONNX models, every engine, two references:

1. exact: an independent walk of the model's own arrays in this file (comparisons in the
   threshold type: float32 for float input, as ONNX Runtime stores thresholds; NaN false
   except for NEQ unless missing_value_tracks_true) summing the leaves' weights in double,
   base first, trees in order. treescore's raw scores must equal it bit for bit.
2. ONNX Runtime 1.32 (one thread), its raw scores (the tree node with post_transform NONE;
   a classifier's node run as the TreeEnsembleRegressor of the same arrays, so a
   one-column binary model gives its one score). ONNX Runtime sums in float32 for float
   input (tree_ensemble_aggregator.h: ScoreValue<float>, `score += weight` per tree in
   order with one thread, then `+ base`, AVERAGE `/ n_trees` in float), so it must be
   within its float32 rounding of the exact sum:
       |ort - exact| <= u (T + 4) (|base| + sum_t |leaf_t|),   u = 2^-24
   (T terms and the base summed in float, each addition one rounding of at most u times
   the partial sum's magnitude, which the sum of magnitudes bounds; +4 for the base, the
   rounding of the stored values' sum and the output cast).

Rows: random, with NaN cells, and for every split threshold (up to a cap) a row whose
value sits on it and on the next float32 up and down.
"""

import functools
import warnings

import numpy as np
import pytest

import tshelpers as H

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import helper, numpy_helper  # noqa: E402

U = 2.0 ** -24
LEQ, LT, GTE, GT, EQ, NEQ, MEMBER, LEAF = range(8)
MODES = {b"BRANCH_LEQ": LEQ, b"BRANCH_LT": LT, b"BRANCH_GTE": GTE, b"BRANCH_GT": GT, b"BRANCH_EQ": EQ,
         b"BRANCH_NEQ": NEQ, b"BRANCH_MEMBER": MEMBER, b"LEAF": LEAF}
N_FEATURES = 6


# ---- reading a model's tree node ------------------------------------------------------------

def _attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _num(at, name):
    if name in at:
        return np.asarray(at[name], dtype=np.float64)
    if name + "_as_tensor" in at:
        return numpy_helper.to_array(at[name + "_as_tensor"]).astype(np.float64).ravel()
    return None


class Ens:
    """A tree ensemble: nodes 0..n-1 (leaves included), roots, leaf weights."""

    def __init__(self, model: "onnx.ModelProto"):
        g = model.graph
        inits = {i.name for i in g.initializer}
        x_in = [i for i in g.input if i.name not in inits][0]
        xtype = x_in.type.tensor_type.elem_type
        tree = [n for n in g.node if n.op_type in ("TreeEnsembleRegressor", "TreeEnsembleClassifier",
                                                   "TreeEnsemble")][0]
        for n in g.node:  # a Cast of the input before the tree decides the type it reads
            if n.op_type == "Cast" and n.output[0] in tree.input:
                xtype = _attrs(n)["to"]
        self.dtype = np.float32 if xtype == 1 else np.float64
        self.node = tree
        at = _attrs(tree)
        self.at = at
        rnd = (lambda v: v.astype(np.float32).astype(np.float64)) if self.dtype == np.float32 else (lambda v: v)
        self.agg = "SUM"
        self.members = {}
        if tree.op_type == "TreeEnsemble":
            self._v5(at, rnd)
        else:
            self._v3(at, rnd, tree.op_type == "TreeEnsembleClassifier")
        # an Add of a constant to the scores (treescore folds it into the base)
        inits = {i.name: numpy_helper.to_array(i) for i in g.initializer}
        score = tree.output[-1]
        self.add = None
        for n in g.node:
            if n.op_type == "Add" and score in n.input:
                other = [i for i in n.input if i != score][0]
                self.add = (n, other, inits[other])
                self.base = self.base + rnd(inits[other].astype(np.float64).ravel())

    def _v3(self, at, rnd, classifier):
        tids = np.asarray(at["nodes_treeids"])
        nids = np.asarray(at["nodes_nodeids"])
        n = len(nids)
        self.mode = np.array([MODES[m] for m in at["nodes_modes"]])
        self.feat = np.asarray(at["nodes_featureids"])
        self.thr = rnd(_num(at, "nodes_values"))
        mt = at.get("nodes_missing_value_tracks_true")
        self.mtrue = np.asarray(mt, dtype=bool) if mt is not None and len(mt) else np.zeros(n, bool)
        ids = {(int(t), int(i)): k for k, (t, i) in enumerate(zip(tids, nids))}
        self.t = np.array([ids.get((int(tids[k]), int(at["nodes_truenodeids"][k])), 0) for k in range(n)])
        self.f = np.array([ids.get((int(tids[k]), int(at["nodes_falsenodeids"][k])), 0) for k in range(n)])
        self.roots = [k for k in range(n) if k == 0 or tids[k] != tids[k - 1]]
        pre = "class" if classifier else "target"
        w = rnd(_num(at, pre + "_weights"))
        wid = np.asarray(at[pre + "_ids"])
        self.leaf = {}
        for t, i, c, v in zip(at[pre + "_treeids"], at[pre + "_nodeids"], wid, w):
            self.leaf.setdefault(ids[(int(t), int(i))], []).append((int(c), float(v)))
        base = _num(at, "base_values")
        if classifier:
            labels = at.get("classlabels_int64s") or at.get("classlabels_strings")
            self.K = len(labels)
            if self.K == 2 and not (wid == 1).any():
                self.K = 1
        else:
            self.K = int(at.get("n_targets", 1))
            self.agg = at.get("aggregate_function", b"SUM").decode()
        self.base = np.zeros(self.K)
        if base is not None and len(base):
            self.base[:len(base)] = rnd(base)[:self.K]
        self.post = at.get("post_transform", b"NONE").decode()

    def _v5(self, at, rnd):
        N = len(at["nodes_featureids"])
        lt = np.asarray(at["leaf_targetids"])
        lw = rnd(numpy_helper.to_array(at["leaf_weights"]).astype(np.float64))
        modes = numpy_helper.to_array(at["nodes_modes"]).astype(int)
        self.mode = np.concatenate([modes, np.full(len(lt), LEAF)])
        self.feat = np.concatenate([np.asarray(at["nodes_featureids"]), np.zeros(len(lt), int)])
        self.thr = np.concatenate([rnd(numpy_helper.to_array(at["nodes_splits"]).astype(np.float64)),
                                   np.zeros(len(lt))])
        mt = at.get("nodes_missing_value_tracks_true")
        self.mtrue = np.concatenate([np.asarray(mt, bool) if mt else np.zeros(N, bool), np.zeros(len(lt), bool)])
        tl, fl = np.asarray(at["nodes_trueleafs"]), np.asarray(at["nodes_falseleafs"])
        tn, fn = np.asarray(at["nodes_truenodeids"]), np.asarray(at["nodes_falsenodeids"])
        self.t = np.where(tl != 0, N + tn, tn)
        self.f = np.where(fl != 0, N + fn, fn)
        self.t = np.concatenate([self.t, np.zeros(len(lt), int)])
        self.f = np.concatenate([self.f, np.zeros(len(lt), int)])
        if "membership_values" in at:
            mv = list(rnd(numpy_helper.to_array(at["membership_values"]).astype(np.float64)))
            for i in range(N):
                if modes[i] == MEMBER:
                    s = set()
                    while not np.isnan(mv[0]):
                        s.add(mv.pop(0))
                    mv.pop(0)
                    self.members[i] = s
        self.roots = [N + tn[r] if tl[r] and fl[r] and tn[r] == fn[r] else r for r in at["tree_roots"]]
        self.leaf = {N + i: [(int(lt[i]), float(lw[i]))] for i in range(len(lt))}
        self.K = int(at["n_targets"])
        self.base = np.zeros(self.K)
        self.agg = {0: "AVERAGE", 1: "SUM"}[at.get("aggregate_function", 1)]
        # as ONNX Runtime 1.32 reads the integer (1 LOGISTIC, 2 SOFTMAX: the spec swaps them)
        self.post = ["NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT"][at.get("post_transform", 0)]

    def exits(self, X, root):
        """The node each row of X reaches from root."""
        X = X.astype(self.dtype)
        idx = np.full(len(X), root)
        act = np.flatnonzero(self.mode[idx] != LEAF)
        while act.size:
            nd = idx[act]
            x = X[act, self.feat[nd]]
            th = self.thr[nd].astype(self.dtype)
            m = self.mode[nd]
            with np.errstate(invalid="ignore"):
                r = np.select([m == LEQ, m == LT, m == GTE, m == GT, m == EQ, m == NEQ],
                              [x <= th, x < th, x >= th, x > th, x == th, x != th], False)
            for j in np.flatnonzero(m == MEMBER):
                r[j] = float(x[j]) in self.members[nd[j]]
            r |= self.mtrue[nd] & np.isnan(x)
            idx[act] = np.where(r, self.t[nd], self.f[nd])
            act = act[self.mode[idx[act]] != LEAF]
        return idx

    def exact(self, X):
        """(raw scores as treescore sums them: base + trees in order, in double; the bound's
        sum of magnitudes)."""
        s = np.tile(self.base, (len(X), 1))
        mag = np.abs(s).copy()
        vals = {}
        for leaf, ws in self.leaf.items():
            v = np.zeros(self.K)
            for c, w in ws:
                v[0 if self.K == 1 else c] += w
            vals[leaf] = v
        for r in self.roots:
            e = self.exits(X, r)
            v = np.array([vals.get(int(i), np.zeros(self.K)) for i in e])
            s = s + v
            mag += np.abs(v)
        return s, mag

    def thresholds(self):
        return [(int(self.feat[i]), float(self.thr[i])) for i in range(len(self.mode)) if self.mode[i] != LEAF
                and self.mode[i] != MEMBER] + [(int(self.feat[i]), v) for i, s in self.members.items() for v in s]


def rows_for(ens: Ens, n_random=300, seed=7, cap=400):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_random, N_FEATURES)).astype(np.float32)
    X[rng.random(X.shape) < 0.08] = np.nan
    extra = []
    th = ens.thresholds()
    if len(th) > cap:
        th = [th[i] for i in rng.choice(len(th), cap, replace=False)]
    for f, t in th:
        for v in (t, np.nextafter(np.float32(t), np.float32(np.inf)), np.nextafter(np.float32(t), np.float32(-np.inf))):
            row = X[rng.integers(n_random)].copy()
            row[f] = v
            extra.append(row)
    return np.vstack([X] + ([np.array(extra, np.float32)] if extra else [])).astype(np.float32)


# ---- ONNX Runtime -------------------------------------------------------------------------------

def _session(model_bytes):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    return ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])


def ort_raw(model, X):
    """ONNX Runtime's raw scores: the graph up to the tree node, the node with
    post_transform NONE (a classifier's run as the regressor of the same arrays)."""
    g = model.graph
    ens = Ens(model)
    tree = ens.node
    pos = list(g.node).index(tree)
    before = list(g.node)[:pos]
    at = ens.at
    if tree.op_type == "TreeEnsemble":
        node = helper.make_node("TreeEnsemble", list(tree.input), ["raw"], domain="ai.onnx.ml",
                                **{k: v for k, v in at.items() if k != "post_transform"})
        ml = 5
    else:
        keep = {k: v for k, v in at.items() if k.startswith("nodes_")}
        pre = "class" if tree.op_type == "TreeEnsembleClassifier" else "target"
        for s in ("ids", "nodeids", "treeids", "weights", "weights_as_tensor"):
            if f"{pre}_{s}" in at:
                keep[f"target_{s}"] = at[f"{pre}_{s}"]
        if ens.K == 1:
            keep["target_ids"] = [0] * len(keep["target_ids"])
        keep["n_targets"] = ens.K
        for k in ("base_values", "base_values_as_tensor"):
            if k in at:
                keep[k] = at[k]
        if ens.agg != "SUM":
            keep["aggregate_function"] = ens.agg
        node = helper.make_node("TreeEnsembleRegressor", list(tree.input), ["raw"], domain="ai.onnx.ml", **keep)
        ml = 3
    x_in = [i for i in g.input if i.name not in {t.name for t in g.initializer}]
    after, out, inits = [], "raw", []
    if ens.add is not None:  # the Add of a constant to the scores, as the graph has it
        after = [helper.make_node("Add", ["raw", ens.add[1]], ["raw_add"])]
        inits = [numpy_helper.from_array(ens.add[2], ens.add[1])]
        out = "raw_add"
    graph = helper.make_graph(before + [node] + after, "raw", x_in,
                              [helper.make_tensor_value_info(out, onnx.TensorProto.FLOAT, None)], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", ml)])
    m.ir_version = 8
    Xin = X.astype(np.float32 if x_in[0].type.tensor_type.elem_type == 1 else np.float64)
    out = _session(m.SerializeToString()).run([out], {x_in[0].name: Xin})[0]
    return np.asarray(out, dtype=np.float64).reshape(len(X), -1)


# ---- the models -----------------------------------------------------------------------------------

def _data(seed=3, n=600, nan=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, N_FEATURES)).astype(np.float32)
    y = X[:, 0] - 0.5 * X[:, 1] * X[:, 2] + 0.3 * rng.normal(size=n)
    if nan:
        X[rng.random(X.shape) < 0.1] = np.nan
    return X, y, (y > 0).astype(int), np.digitize(y, [-0.6, 0.4])


def _skl(est, target, zipmap=False):
    from skl2onnx import to_onnx
    X, y, y2, y3 = _data()
    est.fit(X, {"reg": y, "bin": y2, "multi": y3}[target])
    opts = {id(est): {"zipmap": False}} if (target != "reg" and not zipmap) else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return to_onnx(est, X[:1], options=opts, target_opset={"": 17, "ai.onnx.ml": 3})


def _omt(est, target):
    import onnxmltools
    from onnxmltools.convert.common.data_types import FloatTensorType
    X, y, y2, y3 = _data(nan=True)
    est.fit(X, {"reg": y, "bin": y2, "multi": y3}[target])
    types = [("X", FloatTensorType([None, N_FEATURES]))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if type(est).__module__.startswith("lightgbm"):
            return onnxmltools.convert_lightgbm(est, initial_types=types, zipmap=False, target_opset=15)
        return onnxmltools.convert_xgboost(est, initial_types=types, target_opset=15)


def _omt_lgb_cat():
    """LightGBM with a categorical feature (column 1: integers 0-11): onnxmltools writes each
    categorical split as a chain of BRANCH_EQ nodes whose true edges name one subtree, which
    the loader folds into one category set (model_onnx.c fold_eq_chains)."""
    import lightgbm as lgb
    import onnxmltools
    from onnxmltools.convert.common.data_types import FloatTensorType
    X, y, _, _ = _data(nan=True)
    X[:, 1] = np.random.default_rng(5).integers(0, 12, len(X)).astype(np.float32)
    y = np.nan_to_num(X[:, 0]) + 3.0 * np.isin(X[:, 1], [1, 5, 7]) - 2.0 * np.isin(X[:, 1], [2, 9])
    est = lgb.LGBMRegressor(n_estimators=20, num_leaves=15, verbose=-1, min_data_per_group=5, cat_smooth=1,
                            max_cat_to_onehot=2)
    est.fit(X, y, categorical_feature=[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return onnxmltools.convert_lightgbm(est, initial_types=[("X", FloatTensorType([None, N_FEATURES]))],
                                            target_opset=15)


def _v5_model(agg=1, K=2):
    """A hand-made ai.onnx.ml 5 TreeEnsemble: every mode, missing tracks, a shared leaf, a
    one-leaf tree, two targets."""
    T = onnx.TensorProto
    # tree 0: node0 LEQ f0 0.25 ->(node1, node2); node1 MEMBER f1 {1,2,-0.5} -> (leaf0, leaf1)
    # node2 EQ f2 0.0 (tracks true) -> (leaf2, node3); node3 NEQ f3 1.5 -> (leaf3, leaf4)
    # tree 1: node4 GTE f4 -0.3 -> (node5, leaf5); node5 GT f5 0.7 (tracks true) -> (leaf6, leaf1 shared)
    # node6 LT f0 -1 -> (leaf7, leaf8)   (tree 2)
    # tree 3: one leaf (root node7 with both children leaf 9)
    nodes = [  # mode, feat, split, true, trueleaf, false, falseleaf, mtrue
        (LEQ, 0, 0.25, 1, 0, 2, 0, 0),
        (MEMBER, 1, 0.0, 0, 1, 1, 1, 0),
        (EQ, 2, 0.0, 2, 1, 3, 0, 1),
        (NEQ, 3, 1.5, 3, 1, 4, 1, 0),
        (GTE, 4, -0.3, 5, 0, 5, 1, 0),
        (GT, 5, 0.7, 6, 1, 1, 1, 1),
        (LT, 0, -1.0, 7, 1, 8, 1, 1),
        (LEQ, 0, 0.0, 9, 1, 9, 1, 0),
    ]
    leaf_t = [0, 1, 0, 1, 0, 1, 0, 1, 0, 1]
    leaf_w = [0.5, -1.25, 2.0, 0.125, -3.5, 1.0, 0.0625, -0.75, 4.0, 0.3]
    attrs = dict(
        nodes_modes=helper.make_tensor("m", T.UINT8, [len(nodes)], [n[0] for n in nodes]),
        nodes_featureids=[n[1] for n in nodes],
        nodes_splits=helper.make_tensor("s", T.FLOAT, [len(nodes)], [n[2] for n in nodes]),
        nodes_truenodeids=[n[3] for n in nodes], nodes_trueleafs=[n[4] for n in nodes],
        nodes_falsenodeids=[n[5] for n in nodes], nodes_falseleafs=[n[6] for n in nodes],
        nodes_missing_value_tracks_true=[n[7] for n in nodes],
        membership_values=helper.make_tensor("mv", T.FLOAT, [4], [1.0, 2.0, -1.0, np.nan]),
        leaf_targetids=[t % K for t in leaf_t],
        leaf_weights=helper.make_tensor("w", T.FLOAT, [len(leaf_w)], leaf_w),
        tree_roots=[0, 4, 6, 7], n_targets=K, aggregate_function=agg, post_transform=0)
    node = helper.make_node("TreeEnsemble", ["X"], ["Y"], domain="ai.onnx.ml", **attrs)
    g = helper.make_graph([node], "v5", [helper.make_tensor_value_info("X", T.FLOAT, [None, N_FEATURES])],
                          [helper.make_tensor_value_info("Y", T.FLOAT, [None, K])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml", 5)])
    m.ir_version = 10
    return m


def _v3_modes_model(agg="SUM", double=False):
    """A hand-made TreeEnsembleRegressor (ai.onnx.ml 3) with EQ/NEQ/GTE/GT modes, missing
    tracks, two targets, thresholds and weights as double tensors; double input when asked."""
    T = onnx.TensorProto
    # tree 0: 0 EQ f0 0.5 -> (1, 2); 1 NEQ f1 -1 -> (3, 4); 2 GT f2 0.1 (tracks) -> (5, 6)
    # tree 1: 0 GTE f3 0.2 -> (1, 2); 1 LT f4 0.3 -> (3, 4)
    tids = [0] * 7 + [1] * 5
    nids = [0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4]
    modes = ["BRANCH_EQ", "BRANCH_NEQ", "BRANCH_GT", "LEAF", "LEAF", "LEAF", "LEAF",
             "BRANCH_GTE", "BRANCH_LT", "LEAF", "LEAF", "LEAF"]
    feats = [0, 1, 2, 0, 0, 0, 0, 3, 4, 0, 0, 0]
    vals = [0.5, -1.0, 0.1, 0, 0, 0, 0, 0.2, 0.30000000000000004, 0, 0, 0]
    tn = [1, 3, 5, 0, 0, 0, 0, 1, 3, 0, 0, 0]
    fn = [2, 4, 6, 0, 0, 0, 0, 2, 4, 0, 0, 0]
    mt = [0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0]
    leaves = [(0, 3), (0, 4), (0, 5), (0, 6), (1, 2), (1, 3), (1, 4)]
    w_t, w_n, w_i, w_w = [], [], [], []
    for j, (t, n) in enumerate(leaves):
        for k in range(2):
            w_t.append(t), w_n.append(n), w_i.append(k), w_w.append(0.1 * (j + 1) * (1 if k == 0 else -3) + 1e-9 * j)
    dt = T.DOUBLE if double else T.FLOAT
    attrs = dict(nodes_treeids=tids, nodes_nodeids=nids, nodes_modes=modes, nodes_featureids=feats,
                 nodes_values_as_tensor=helper.make_tensor("v", dt, [len(vals)], vals),
                 nodes_truenodeids=tn, nodes_falsenodeids=fn, nodes_missing_value_tracks_true=mt,
                 target_treeids=w_t, target_nodeids=w_n, target_ids=w_i,
                 target_weights_as_tensor=helper.make_tensor("w", dt, [len(w_w)], w_w),
                 n_targets=2, aggregate_function=agg, post_transform="NONE")
    if agg == "SUM":
        attrs["base_values_as_tensor"] = helper.make_tensor("b", dt, [2], [0.25, -1.0 / 3])
    node = helper.make_node("TreeEnsembleRegressor", ["X"], ["Y"], domain="ai.onnx.ml", **attrs)
    xt = T.DOUBLE if double else T.FLOAT
    g = helper.make_graph([node], "v3", [helper.make_tensor_value_info("X", xt, [None, N_FEATURES])],
                          [helper.make_tensor_value_info("Y", T.FLOAT, [None, 2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)])
    m.ir_version = 8
    return m


def _cast_model():
    """A double graph input cast to float before a TreeEnsembleRegressor (float thresholds),
    an Add of a constant after it (folded into the base), then an Identity."""
    T = onnx.TensorProto
    m = _v3_modes_model("SUM")
    tree = m.graph.node[0]
    tree.input[0] = "Xf"
    tree.output[0] = "raw"
    cast = helper.make_node("Cast", ["X"], ["Xf"], to=T.FLOAT)
    add = helper.make_node("Add", ["raw", "c"], ["sum"])
    ident = helper.make_node("Identity", ["sum"], ["Y"])
    g = helper.make_graph([cast, tree, add, ident], "cast", [helper.make_tensor_value_info("X", T.DOUBLE, [None, N_FEATURES])],
                          [helper.make_tensor_value_info("Y", T.FLOAT, [None, 2])],
                          [numpy_helper.from_array(np.array([0.5, -0.25], np.float32), "c")])
    m2 = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)])
    m2.ir_version = 8
    return m2


def _cases():
    from sklearn.ensemble import (ExtraTreesRegressor, GradientBoostingClassifier, GradientBoostingRegressor,
                                  RandomForestClassifier, RandomForestRegressor)
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
    c = {
        "skl-gb-reg": lambda: _skl(GradientBoostingRegressor(n_estimators=60, max_depth=4, random_state=0), "reg"),
        "skl-gb-bin": lambda: _skl(GradientBoostingClassifier(n_estimators=40, max_depth=3, random_state=0), "bin"),
        "skl-gb-multi": lambda: _skl(GradientBoostingClassifier(n_estimators=20, max_depth=3, random_state=0),
                                     "multi"),
        "skl-rf-reg": lambda: _skl(RandomForestRegressor(n_estimators=20, random_state=0), "reg"),
        "skl-rf-bin": lambda: _skl(RandomForestClassifier(n_estimators=15, max_depth=8, random_state=0), "bin"),
        "skl-rf-multi": lambda: _skl(RandomForestClassifier(n_estimators=15, max_depth=8, random_state=0), "multi"),
        "skl-et-reg": lambda: _skl(ExtraTreesRegressor(n_estimators=10, max_depth=10, random_state=0), "reg"),
        "skl-dt-reg": lambda: _skl(DecisionTreeRegressor(random_state=0), "reg"),  # fully grown
        "skl-dt-multi": lambda: _skl(DecisionTreeClassifier(max_depth=9, random_state=0), "multi"),
        "skl-gb-bin-zipmap": lambda: _skl(GradientBoostingClassifier(n_estimators=10, max_depth=3, random_state=0),
                                          "bin", zipmap=True),
        "v5-sum": lambda: _v5_model(1, 2),
        "v5-average": lambda: _v5_model(0, 2),
        "v5-one-target": lambda: _v5_model(1, 1),
        "v3-modes": lambda: _v3_modes_model("SUM"),
        "v3-modes-average": lambda: _v3_modes_model("AVERAGE"),
        "v3-modes-double": lambda: _v3_modes_model("SUM", double=True),
        "v3-cast-add": _cast_model,
    }
    try:
        import lightgbm as lgb
        c.update({
            "lgb-reg": lambda: _omt(lgb.LGBMRegressor(n_estimators=40, num_leaves=15, verbose=-1), "reg"),
            "lgb-bin": lambda: _omt(lgb.LGBMClassifier(n_estimators=30, num_leaves=15, verbose=-1), "bin"),
            "lgb-multi": lambda: _omt(lgb.LGBMClassifier(n_estimators=15, num_leaves=7, verbose=-1), "multi"),
            "lgb-cat": _omt_lgb_cat,
        })
    except ImportError:
        pass
    try:
        import xgboost as xgb
        c.update({
            "xgb-reg": lambda: _omt(xgb.XGBRegressor(n_estimators=40, max_depth=4), "reg"),
            "xgb-bin": lambda: _omt(xgb.XGBClassifier(n_estimators=30, max_depth=4), "bin"),
            "xgb-multi": lambda: _omt(xgb.XGBClassifier(n_estimators=10, max_depth=3), "multi"),
        })
    except ImportError:
        pass
    return c


CASES = _cases()


@functools.lru_cache(maxsize=None)
def case(name):
    """(model proto, Ens, rows, exact scores, magnitudes, ONNX Runtime's raw scores)."""
    m = CASES[name]()
    ens = Ens(m)
    X = rows_for(ens)
    exact, mag = ens.exact(X)
    return m, ens, X, exact, mag, ort_raw(m, X)


def score_cli(path, data, n, K, engine, *extra):
    args = ["score", "-m", path, "-d", data, "--engine", engine, *extra]
    p = H.run_cli(args)
    assert p.returncode == 0, f"treescore {' '.join(map(str, args))}: {p.stderr}"
    lines = p.stdout.splitlines()
    assert len(lines) == n, f"{len(lines)} lines for {n} rows"
    return np.array([[float(v) for v in ln.split("\t")] for ln in lines]).reshape(n, K)


@pytest.mark.parametrize("name", sorted(CASES))
def test_onnx_model(engine, workdir, name):
    m, ens, X, exact, mag, ref_ort = case(name)
    path = workdir / f"{name}.onnx"
    if not path.exists():
        path.write_bytes(m.SerializeToString())
    data = workdir / f"{name}.csv"
    if not data.exists():
        H.write_csv(data, X)
    ours = score_cli(path, data, len(X), ens.K, engine)
    H.assert_exact(ours.ravel(), exact.ravel(), what=f"{name} raw scores vs the exact sum of the model's leaves")
    # ONNX Runtime, within its float32 summation (double input: summed in double)
    n_trees = len(ens.roots)
    if ens.agg == "AVERAGE":
        exact_o, mag_o = exact / n_trees, mag / n_trees
    else:
        exact_o, mag_o = exact, mag
    u = U if ens.dtype == np.float32 or True else 2.0 ** -53  # the output is float32 either way
    bound = u * (n_trees + 4) * mag_o + U * np.abs(exact_o)
    # ONNX Runtime 1.32 departs from the spec for BRANCH_MEMBER: it takes integer members
    # only and, for some sets, truncates a non-integer x (0.999 is in {-1, 0} for it);
    # treescore tests exact membership as the spec (and onnx.reference) does, so ONNX
    # Runtime is compared on the rows whose MEMBER features hold integers (or NaN)
    keep = np.ones(len(X), bool)
    for f in {int(ens.feat[i]) for i in ens.members}:
        keep &= np.isnan(X[:, f]) | (X[:, f] == np.round(X[:, f]))
    ref_ort, exact_o, bound = ref_ort[keep], exact_o[keep], bound[keep]
    H.assert_within(ref_ort.ravel(), exact_o.ravel(), bound.ravel(),
                    what=f"{name}: ONNX Runtime {ort.__version__} vs the exact sum (float32 bound)")


def test_onnx_cases_cover_modes():
    """The hand-made models hold every mode, a shared leaf, a one-leaf tree, NaN tracking."""
    seen = set()
    for name in ("v5-sum", "v3-modes"):
        ens = case(name)[1]
        seen |= set(int(x) for x in ens.mode)
        X = case(name)[2]
        assert np.isnan(X).any()
    assert seen == set(range(8))


def test_onnx_zipmap_same_scores(workdir):
    """The ZipMap graph (skl2onnx's default) loads and scores as the tree node does."""
    m = case("skl-gb-bin-zipmap")[0]
    assert any(n.op_type == "ZipMap" for n in m.graph.node)


def test_onnx_detection_and_info(workdir):
    m = case("skl-gb-multi")[0]
    path = workdir / "detect.onnx"
    path.write_bytes(m.SerializeToString())
    p = H.run_cli(["info", "-m", path])
    assert p.returncode == 0, p.stderr
    assert "format:           onnx" in p.stdout
    assert "post_transform=SOFTMAX" in p.stdout
    p2 = H.run_cli(["info", "-m", path, "--model-format", "onnx"])
    assert p2.returncode == 0 and p2.stdout == p.stdout


def _refused(workdir, m, name, *needles):
    path = workdir / f"refused-{name}.onnx"
    path.write_bytes(m.SerializeToString())
    p = H.run_cli(["info", "-m", path])
    assert p.returncode != 0, f"{name}: loaded"
    for s in needles:
        assert s in p.stderr, f"{name}: {p.stderr!r} lacks {s!r}"
    assert len(p.stderr.strip().splitlines()) == 1


def _eq_chain_model(n, shared):
    """Opset 5: x0 == 0 ? L : (x0 == 1 ? L' : ... (x0 == n - 1 ? L'' : leaf 1)), the true
    edges all to leaf 0 (shared: one set, as onnxmltools writes a LightGBM categorical
    split) or to leaves 0 and 1 in turn. Leaf 0 weighs 1, leaf 1 weighs 2."""
    T = onnx.TensorProto
    attrs = dict(nodes_modes=helper.make_tensor("m", T.UINT8, [n], [EQ] * n), nodes_featureids=[0] * n,
                 nodes_splits=helper.make_tensor("s", T.FLOAT, [n], [float(i) for i in range(n)]),
                 nodes_truenodeids=[0 if shared else i % 2 for i in range(n)], nodes_trueleafs=[1] * n,
                 nodes_falsenodeids=list(range(1, n)) + [1], nodes_falseleafs=[0] * (n - 1) + [1],
                 leaf_targetids=[0, 0], leaf_weights=helper.make_tensor("w", T.FLOAT, [2], [1.0, 2.0]),
                 tree_roots=[0], n_targets=1)
    g = helper.make_graph([helper.make_node("TreeEnsemble", ["X"], ["Y"], domain="ai.onnx.ml", **attrs)], "g",
                          [helper.make_tensor_value_info("X", T.FLOAT, [None, 2])],
                          [helper.make_tensor_value_info("Y", T.FLOAT, [None, 1])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml", 5)])


def test_onnx_eq_chain_is_one_set(workdir):
    """A chain of 30 EQ nodes whose true edges name one leaf loads as one set (it was 2^30
    comparisons, refused) and scores as the chain: members exactly, NaN and the rest false."""
    m = _eq_chain_model(30, shared=True)
    path = workdir / "eq-set.onnx"
    path.write_bytes(m.SerializeToString())
    X = np.array([[v, 0.0] for v in (0, 5, 29, 30, 2.5, -1, np.nan, -0.0, 1e9, 28.999998)], np.float32)
    data = workdir / "eq-set.csv"
    H.write_csv(data, X)
    want = np.where(np.isin(X[:, 0], np.arange(30)), 1.0, 2.0)
    for engine in ("naive", "auto"):
        got = score_cli(path, data, len(X), 1, engine).ravel()
        H.assert_exact(got, want, what=f"eq-set, {engine}")
    H.assert_exact(ort_raw(m, X).ravel(), want, what="ONNX Runtime on the chain")


def test_onnx_refusals(workdir):
    m = _v5_model(2, 2)
    _refused(workdir, m, "min", "aggregate_function MIN")
    m = _v5_model(3, 2)
    _refused(workdir, m, "max", "aggregate_function MAX")
    m = _v3_modes_model("MIN")
    _refused(workdir, m, "min3", "aggregate_function MIN")
    # a node that changes the scores: named
    m = _v5_model(1, 2)
    sig = helper.make_node("Sigmoid", ["Y"], ["Z"], name="squash")
    m.graph.node.append(sig)
    _refused(workdir, m, "sigmoid", "op_type 'Sigmoid'", "name 'squash'", "not understood")
    # Mul by a constant other than 1
    m = _v5_model(1, 2)
    m.graph.initializer.append(numpy_helper.from_array(np.array([2.0], np.float32), "two"))
    m.graph.node.append(helper.make_node("Mul", ["Y", "two"], ["Z"]))
    _refused(workdir, m, "mul2", "op_type 'Mul'", "constant other than 1")
    # EQ nodes copy their false subtree: a chain of 30 (true edges to two leaves in turn,
    # so not one set) would be 2^30 comparisons
    _refused(workdir, _eq_chain_model(30, shared=False), "eq-chain", "grows past its limit", "BRANCH_EQ")
    # no tree
    g = helper.make_graph([helper.make_node("Relu", ["X"], ["Y"])], "g",
                          [helper.make_tensor_value_info("X", onnx.TensorProto.FLOAT, [None, 2])],
                          [helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, [None, 2])])
    _refused(workdir, helper.make_model(g), "relu", "op_type 'Relu'")


def test_onnx_add_refusals(workdir):
    """An Add of a constant is folded into the base only where that is what ONNX Runtime
    computes: after a post_transform it adds to the transformed scores (treescore added
    before the transform), and a graph output that skips the Add (a dead branch) holds
    the scores without it (treescore returned them with it)."""
    m = _cast_model()
    tree = m.graph.node[1]
    assert tree.op_type == "TreeEnsembleRegressor"
    for a in list(tree.attribute):
        if a.name == "post_transform":
            tree.attribute.remove(a)
    tree.attribute.append(helper.make_attribute("post_transform", "PROBIT"))
    _refused(workdir, m, "add-after-probit", "an Add to the scores after post_transform PROBIT")
    # the graph returns the tree's own output; the Add feeds nothing
    m = _cast_model()
    del m.graph.output[:]
    m.graph.output.append(helper.make_tensor_value_info("raw", onnx.TensorProto.FLOAT, [None, 2]))
    _refused(workdir, m, "add-dead", "a graph output holds the scores without the Add")
    # both outputs: ambiguous
    m = _cast_model()
    m.graph.output.append(helper.make_tensor_value_info("raw", onnx.TensorProto.FLOAT, [None, 2]))
    _refused(workdir, m, "add-both", "a graph output holds the scores without the Add")


def _unweighted_leaf_model(pairs, base, n_classes=None, post="NONE"):
    """One stump x0 <= 0 (node 1 true, node 2 false) whose leaves carry the (leaf, id,
    weight) triples `pairs`: a leaf without a triple for an output leaves that output
    untouched for the rows reaching it. A TreeEnsembleClassifier of n_classes classes,
    else a TreeEnsembleRegressor of 2 targets."""
    T = onnx.TensorProto
    pre = "class" if n_classes else "target"
    kw = dict(nodes_treeids=[0, 0, 0], nodes_nodeids=[0, 1, 2], nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"],
              nodes_featureids=[0, 0, 0], nodes_values=[0.0, 0.0, 0.0], nodes_truenodeids=[1, 0, 0],
              nodes_falsenodeids=[2, 0, 0], post_transform=post, **{
                  f"{pre}_treeids": [0] * len(pairs), f"{pre}_nodeids": [p[0] for p in pairs],
                  f"{pre}_ids": [p[1] for p in pairs], f"{pre}_weights": [p[2] for p in pairs]})
    if base is not None:
        kw["base_values"] = base
    if n_classes:
        kw["classlabels_int64s"] = list(range(n_classes))
        node = helper.make_node("TreeEnsembleClassifier", ["X"], ["L", "P"], domain="ai.onnx.ml", **kw)
        outs = [helper.make_tensor_value_info("L", T.INT64, [None]),
                helper.make_tensor_value_info("P", T.FLOAT, [None, n_classes])]
    else:
        node = helper.make_node("TreeEnsembleRegressor", ["X"], ["Y"], domain="ai.onnx.ml", n_targets=2, **kw)
        outs = [helper.make_tensor_value_info("Y", T.FLOAT, [None, 2])]
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", T.FLOAT, [None, 1])], outs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)])
    m.ir_version = 8
    return m


def test_onnx_unweighted_leaf_refusals(workdir):
    """ONNX Runtime adds a base value only to the outputs that a row's leaves carry a
    weight for (an untouched output is 0, not its base value), and a two-class
    classifier's row whose leaves weigh no class 1 gets [1, 0] (or, with a base value,
    uninitialized memory). treescore added the base regardless (0.2 where ONNX Runtime
    wrote 0.0): such models are refused, the ones where every row is weighted load."""
    # regressor: target 0 weighted on leaf 1 only, base 0.2
    _refused(workdir, _unweighted_leaf_model([(1, 0, 0.5), (1, 1, 0.25), (2, 1, 0.75)], [0.2, 0.4]), "reg-untouched",
             "target 0", "base value")
    # two classes, one base value: class 0 never weighted (ONNX Runtime: 0.0 for class 0)
    _refused(workdir, _unweighted_leaf_model([(1, 1, 0.25), (2, 1, 0.75)], [0.2], 2), "bin-untouched0",
             "class 0", "base value")
    # two classes: class 1 missing from leaf 2 (ONNX Runtime: [1, 0] for its rows)
    _refused(workdir, _unweighted_leaf_model([(1, 1, 0.5)], None, 2), "bin-untouched1", "class 1")
    # one column (class 0 weights only), base value, leaf 2 unweighted
    _refused(workdir, _unweighted_leaf_model([(1, 0, 0.5)], [0.2], 2), "bin1-untouched", "class 0", "base value")
    # loads, and equals ONNX Runtime: every leaf weighted, or base 0 where not, or > 2 classes
    X = np.array([[-1.0], [1.0], [0.0], [np.nan]], np.float32)
    ok = [([(1, 0, 0.5), (2, 0, 0.0), (1, 1, 0.25), (2, 1, 0.75)], [0.2, 0.4], None),
          ([(1, 0, 0.5), (1, 1, 0.25), (2, 1, 0.75)], [0.0, 0.4], None),
          ([(1, 0, 0.5), (1, 1, 0.25), (2, 1, 0.75)], None, 2),
          ([(1, 0, -0.5), (1, 1, 0.5), (2, 1, -1.0), (2, 2, 0.5)], [0.1, 0.2, 0.3], 3)]
    for i, (pairs, base, n_classes) in enumerate(ok):
        m = _unweighted_leaf_model(pairs, base, n_classes)
        path = workdir / f"weighted-{i}.onnx"
        path.write_bytes(m.SerializeToString())
        data = workdir / f"weighted-{i}.csv"
        H.write_csv(data, X)
        K = n_classes or 2
        got = score_cli(path, data, len(X), K, "naive")
        s = _session(m.SerializeToString())
        want = s.run([s.get_outputs()[-1].name], {"X": X})[0]
        # ONNX Runtime's float32 sums of these few weights are within 1e-6 of the double ones
        np.testing.assert_allclose(got, np.asarray(want, np.float64).reshape(len(X), K), rtol=0, atol=1e-6,
                                   err_msg=f"weighted-{i}")


def _cast_chain_model(casts, x_type):
    """Graph input of x_type, the given Casts in turn, then a stump "x <= 0.1" (threshold a
    double tensor when the tree reads doubles) scoring 1 (true) or 2."""
    T = onnx.TensorProto
    nodes, name, t = [], "X", x_type
    for i, to in enumerate(casts):
        nodes.append(helper.make_node("Cast", [name], [f"c{i}"], to=to))
        name, t = f"c{i}", to
    kw = dict(nodes_treeids=[0, 0, 0], nodes_nodeids=[0, 1, 2], nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"],
              nodes_featureids=[0, 0, 0], nodes_truenodeids=[1, 0, 0], nodes_falsenodeids=[2, 0, 0],
              target_treeids=[0, 0], target_nodeids=[1, 2], target_ids=[0, 0], target_weights=[1.0, 2.0], n_targets=1)
    if t == T.DOUBLE:
        kw["nodes_values_as_tensor"] = helper.make_tensor("v", T.DOUBLE, [3], [0.1, 0.0, 0.0])
    else:
        kw["nodes_values"] = [0.1, 0.0, 0.0]
    nodes.append(helper.make_node("TreeEnsembleRegressor", [name], ["Y"], domain="ai.onnx.ml", **kw))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", x_type, [None, 1])],
                          [helper.make_tensor_value_info("Y", T.FLOAT, [None, 1])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)])
    m.ir_version = 8
    return m


def test_onnx_float_cast_then_double_tree(workdir):
    """A tree reading doubles that went through float32 on the way (a float graph input
    cast to double; a double input cast to float and back) sees float32 values: x = 0.1
    (double) reaches it as 0.10000000149, above the double threshold 0.1 (score 2, as
    ONNX Runtime computes). treescore compared the double 0.1 itself (score 1)."""
    T = onnx.TensorProto
    X = np.array([0.1, 0.10000000149011612, np.nextafter(0.1, 0), 0.09999999, 0.2, np.nan]).reshape(-1, 1)
    data = workdir / "cast-chain.csv"
    H.write_csv(data, X)
    for i, (casts, x_type) in enumerate([([T.DOUBLE], T.FLOAT), ([T.FLOAT, T.DOUBLE], T.DOUBLE)]):
        m = _cast_chain_model(casts, x_type)
        path = workdir / f"cast-chain-{i}.onnx"
        path.write_bytes(m.SerializeToString())
        Xin = X.astype(np.float32 if x_type == T.FLOAT else np.float64)
        want = np.asarray(_session(m.SerializeToString()).run(None, {"X": Xin})[0], np.float64).ravel()
        for engine in ("naive", "auto"):
            got = score_cli(path, data, len(X), 1, engine).ravel()
            H.assert_exact(got, want, what=f"cast chain {i}, {engine}")


def test_onnx_one_target_leaf_with_two_weights(workdir):
    """A leaf holding two target weights: ONNX Runtime 1.32 sums them when there are
    several targets but takes only the first one listed with a single target (the spec
    sums); treescore summed (1.5 where ONNX Runtime wrote 1.0), so a one-target ensemble
    with such a leaf is refused, and the several-target one equals ONNX Runtime."""
    T = onnx.TensorProto

    def stump(K, ids, nodes, weights):
        kw = dict(nodes_treeids=[0, 0, 0], nodes_nodeids=[0, 1, 2], nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"],
                  nodes_featureids=[0, 0, 0], nodes_values=[0.0, 0.0, 0.0], nodes_truenodeids=[1, 0, 0],
                  nodes_falsenodeids=[2, 0, 0], target_treeids=[0] * len(ids), target_nodeids=nodes,
                  target_ids=ids, target_weights=weights, n_targets=K)
        g = helper.make_graph([helper.make_node("TreeEnsembleRegressor", ["X"], ["Y"], domain="ai.onnx.ml", **kw)], "g",
                              [helper.make_tensor_value_info("X", T.FLOAT, [None, 1])],
                              [helper.make_tensor_value_info("Y", T.FLOAT, [None, K])])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)])
        m.ir_version = 8
        return m

    _refused(workdir, stump(1, [0, 0, 0], [1, 1, 2], [1.0, 0.5, 2.0]), "one-target-two-weights",
             "tree 0 node 1", "2 weights")
    m = stump(2, [0, 0, 1, 0], [1, 1, 1, 2], [1.0, 0.5, 0.25, 2.0])
    path = workdir / "two-target-two-weights.onnx"
    path.write_bytes(m.SerializeToString())
    X = np.array([[-1.0], [1.0], [np.nan]], np.float32)
    data = workdir / "two-weights.csv"
    H.write_csv(data, X)
    got = score_cli(path, data, len(X), 2, "naive")
    want = np.asarray(_session(m.SerializeToString()).run(None, {"X": X})[0], np.float64)
    H.assert_exact(got.ravel(), want.ravel(), what="two targets, a leaf with two weights for target 0")


def test_onnx_attribute_and_tensor_both_refused(workdir):
    """nodes_values and nodes_values_as_tensor (or target_weights / base_values with their
    _as_tensor twins) given together: ONNX Runtime refuses the model (one of them only);
    treescore silently used the plain one (threshold 0.5, not the tensor's 0.3)."""
    T = onnx.TensorProto
    base = dict(nodes_treeids=[0, 0, 0], nodes_nodeids=[0, 1, 2], nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"],
                nodes_featureids=[0, 0, 0], nodes_truenodeids=[1, 0, 0], nodes_falsenodeids=[2, 0, 0],
                target_treeids=[0, 0], target_nodeids=[1, 2], target_ids=[0, 0], n_targets=1)
    dt = lambda n, v: helper.make_tensor(n, T.DOUBLE, [len(v)], v)  # noqa: E731
    for name, extra in [("nodes_values", dict(nodes_values=[0.5, 0, 0], nodes_values_as_tensor=dt("v", [0.3, 0, 0]),
                                              target_weights=[1.0, 2.0])),
                        ("target_weights", dict(nodes_values=[0.5, 0, 0], target_weights=[1.0, 2.0],
                                                target_weights_as_tensor=dt("w", [4.0, 8.0]))),
                        ("base_values", dict(nodes_values=[0.5, 0, 0], target_weights=[1.0, 2.0], base_values=[0.5],
                                             base_values_as_tensor=dt("b", [0.25])))]:
        node = helper.make_node("TreeEnsembleRegressor", ["X"], ["Y"], domain="ai.onnx.ml", **base, **extra)
        g = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", T.FLOAT, [None, 1])],
                              [helper.make_tensor_value_info("Y", T.FLOAT, [None, 1])])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)])
        m.ir_version = 8
        with pytest.raises(Exception):
            _session(m.SerializeToString())
        _refused(workdir, m, f"both-{name}", f"both {name} and {name}_as_tensor")


def test_onnx_float_sum_overflow_refused(workdir):
    """ONNX Runtime sums float input's weights in float32: weights whose sum can pass
    FLT_MAX come out inf there (3e38 + 3e38), finite (6e38) in treescore's double sum;
    such a model is refused. The same weights as doubles (double input) load."""
    T = onnx.TensorProto

    def model(x_type):
        dt = x_type
        kw = dict(nodes_treeids=[0, 0, 0, 1], nodes_nodeids=[0, 1, 2, 0],
                  nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF", "LEAF"], nodes_featureids=[0] * 4,
                  nodes_truenodeids=[1, 0, 0, 0], nodes_falsenodeids=[2, 0, 0, 0],
                  nodes_values_as_tensor=helper.make_tensor("v", dt, [4], [0.5, 0, 0, 0]),
                  target_treeids=[0, 0, 1], target_nodeids=[1, 2, 0], target_ids=[0, 0, 0],
                  target_weights_as_tensor=helper.make_tensor("w", dt, [3], [3e38, -3e38, 3e38]), n_targets=1)
        node = helper.make_node("TreeEnsembleRegressor", ["X"], ["Y"], domain="ai.onnx.ml", **kw)
        g = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", x_type, [None, 1])],
                              [helper.make_tensor_value_info("Y", T.FLOAT, [None, 1])])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)])
        m.ir_version = 8
        return m

    m = model(T.FLOAT)
    X = np.array([[0.25], [0.75]], np.float32)
    assert np.isinf(_session(m.SerializeToString()).run(None, {"X": X})[0][0, 0])
    _refused(workdir, m, "float-overflow", "float32", "inf")
    path = workdir / "double-big.onnx"
    path.write_bytes(model(T.DOUBLE).SerializeToString())
    p = H.run_cli(["info", "-m", path])
    assert p.returncode == 0, p.stderr


def test_onnx_add_after_one_column_binary_refused(workdir):
    """A two-class classifier with class-0 weights only is one score s, written by ONNX
    Runtime as [1 - s, s] (or [-s, s]); an Add of c after it adds c to both columns,
    [1 - s + c, s + c], which no one score gives: treescore folded c into s and wrote
    [1 - s - c, s + c] (0.25 where ONNX Runtime wrote 0.75). Refused; the same Add after
    a two-column classifier (both classes weighted) loads."""
    T = onnx.TensorProto

    def model(pairs):
        kw = dict(nodes_treeids=[0, 0, 0], nodes_nodeids=[0, 1, 2], nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"],
                  nodes_featureids=[0, 0, 0], nodes_values=[0.0, 0.0, 0.0], nodes_truenodeids=[1, 0, 0],
                  nodes_falsenodeids=[2, 0, 0], class_treeids=[0] * len(pairs), class_nodeids=[p[0] for p in pairs],
                  class_ids=[p[1] for p in pairs], class_weights=[p[2] for p in pairs], post_transform="NONE",
                  classlabels_int64s=[0, 1])
        nodes = [helper.make_node("TreeEnsembleClassifier", ["X"], ["L", "P"], domain="ai.onnx.ml", **kw),
                 helper.make_node("Add", ["P", "c"], ["Q"])]
        g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", T.FLOAT, [None, 1])],
                              [helper.make_tensor_value_info("L", T.INT64, [None]),
                               helper.make_tensor_value_info("Q", T.FLOAT, [None, 2])],
                              [numpy_helper.from_array(np.array([0.25], np.float32), "c")])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)])
        m.ir_version = 8
        return m

    _refused(workdir, model([(1, 0, 0.5), (2, 0, 0.75)]), "add-binary", "Add", "one column")
    path = workdir / "add-two-columns.onnx"
    path.write_bytes(model([(1, 0, 0.5), (2, 0, 0.75), (1, 1, 0.125), (2, 1, 0.25)]).SerializeToString())
    p = H.run_cli(["info", "-m", path])
    assert p.returncode == 0, p.stderr


def test_onnx_v5_tensor_type_must_match_input(workdir):
    """Opset 5's nodes_splits, leaf_weights and membership_values must have the input's
    element type (the spec; ONNX Runtime refuses the model otherwise). treescore read
    such a file its own way (double splits compared with float rows): refused, naming
    the attribute."""
    T = onnx.TensorProto

    def v5(xt, st, wt, mt=None):
        attrs = dict(nodes_modes=helper.make_tensor("m", T.UINT8, [1], [0 if mt is None else MEMBER]),
                     nodes_featureids=[0], nodes_splits=helper.make_tensor("s", st, [1], [0.5]),
                     nodes_truenodeids=[0], nodes_trueleafs=[1], nodes_falsenodeids=[1], nodes_falseleafs=[1],
                     leaf_targetids=[0, 0], leaf_weights=helper.make_tensor("w", wt, [2], [1.0, 2.0]),
                     tree_roots=[0], n_targets=1, aggregate_function=1, post_transform=0)
        if mt is not None:
            attrs["membership_values"] = helper.make_tensor("mv", mt, [2], [1.0, np.nan])
        g = helper.make_graph([helper.make_node("TreeEnsemble", ["X"], ["Y"], domain="ai.onnx.ml", **attrs)], "g",
                              [helper.make_tensor_value_info("X", xt, [None, 1])],
                              [helper.make_tensor_value_info("Y", xt, [None, 1])])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml", 5)])
        m.ir_version = 10
        return m

    F, D = T.FLOAT, T.DOUBLE
    for i, (args, attr) in enumerate([((F, D, F), "nodes_splits"), ((D, F, D), "nodes_splits"),
                                      ((F, F, D), "leaf_weights"), ((D, D, F), "leaf_weights"),
                                      ((F, F, F, D), "membership_values"), ((D, D, D, F), "membership_values")]):
        m = v5(*args)
        with pytest.raises(Exception):
            _session(m.SerializeToString())
        _refused(workdir, m, f"v5-type-{i}", attr, "the input's")
    p = workdir / "v5-type-ok.onnx"
    p.write_bytes(v5(D, D, D, D).SerializeToString())
    assert H.run_cli(["info", "-m", p]).returncode == 0
