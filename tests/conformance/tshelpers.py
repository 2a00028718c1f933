# tshelpers.py: shared helpers of the conformance tests (running the CLI, writing data files, tree walking, references).
"""Helpers for the conformance tests.

- running `treescore score` and parsing its "%.17g" output back to exact doubles;
- comparing against a reference bit for bit (or within a tolerance) and, on failure,
  printing the first mismatching rows with their feature values;
- writing scoring data as CSV and SVMlight text (the raw format is in bench/letor_gen.py);
- reading the trees of LightGBM text, XGBoost JSON and QuickRank XML models into one
  small structure, used to build rows whose values sit exactly on split thresholds;
- a pure-Python QuickRank scorer (the reference for QuickRank XML files);
- a cache of trained models under tests/conformance/.cache keyed by parameter hashes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "bench"))
import letor_gen  # noqa: E402  (bench/letor_gen.py: the shared data generator)

CACHE_DIR = HERE / ".cache"
DATA_DIR = REPO / "tests" / "data"
F32 = np.float32


# ---- the CLI ----------------------------------------------------------------------------

def treescore_bin() -> Path:
    return Path(os.environ.get("TS_BIN", str(REPO / "build" / "treescore")))


# Every engine, auto included (the planner picks one of them by timing).
DEFAULT_ENGINES = "naive,qs,vqs,ifelse,vpred,block-naive,block-vpred,rapid,trees-simd,oblivious,deep,auto"


def engines() -> list:
    return [e.strip() for e in os.environ.get("TS_ENGINES", DEFAULT_ENGINES).split(",") if e.strip()]


def threads_args() -> list:
    """["--threads", N] when the environment sets TS_THREADS=N (every `treescore score` run
    gets it ahead of its own options, so a test's explicit --threads still wins); else []."""
    n = os.environ.get("TS_THREADS", "").strip()
    return ["--threads", n] if n else []


def require_bin() -> Path:
    """The treescore binary; fails the calling test (never skips) when it is missing."""
    b = treescore_bin()
    if not (b.is_file() and os.access(b, os.X_OK)):
        pytest.fail(f"treescore binary not found or not executable: {b} "
                    f"(build it first, e.g. `cmake -B build && cmake --build build`, or set TS_BIN)",
                    pytrace=False)
    return b


def run_cli(args: list, timeout: float = 120.0, stdin: bytes = None) -> subprocess.CompletedProcess:
    b = require_bin()
    if args and str(args[0]) == "score":
        args = [args[0]] + threads_args() + list(args[1:])
    p = subprocess.run([str(b)] + [str(a) for a in args], capture_output=True, timeout=timeout,
                       input=stdin if stdin is not None else b"",
                       )
    return subprocess.CompletedProcess(p.args, p.returncode, p.stdout.decode(errors="replace"),
                                       p.stderr.decode(errors="replace"))


def parse_scores(text: str, n_rows: int, what: str) -> np.ndarray:
    lines = text.splitlines()
    if len(lines) != n_rows:
        pytest.fail(f"{what}: expected {n_rows} score lines, got {len(lines)}; first lines: {lines[:3]!r}",
                    pytrace=False)
    try:
        return np.array([float(s) for s in lines], dtype=np.float64)
    except ValueError as e:
        pytest.fail(f"{what}: unparsable score line: {e}", pytrace=False)


def score(model, data, n_rows: int, engine: str, *extra, out_file=None, stdin: bytes = None) -> np.ndarray:
    """Run `treescore score -m model -d data --engine engine extra...` and return the scores
    (data "-" with stdin=bytes feeds standard input)."""
    args = ["score", "-m", model, "-d", data, "--engine", engine, *extra]
    if out_file is not None:
        args += ["-o", out_file]
    p = run_cli(args, stdin=stdin)
    what = "treescore " + " ".join(str(a) for a in args)
    if p.returncode != 0:
        pytest.fail(f"{what}\nexited with status {p.returncode}\nstderr:\n{p.stderr.strip()}", pytrace=False)
    text = Path(out_file).read_text() if out_file is not None else p.stdout
    return parse_scores(text, n_rows, what)


# ---- comparison ------------------------------------------------------------------------------

def _fmt_row(x: np.ndarray, limit: int = 60) -> str:
    cells = [f"{j}:{float(v)!r}" for j, v in enumerate(x)]
    s = " ".join(cells[:limit])
    return s + (" ..." if len(cells) > limit else "")


def _mismatch_report(bad: np.ndarray, ours, ref, X, tags, what: str, n_show: int = 5) -> str:
    lines = [f"{what}: {bad.size} of {len(ref)} rows differ"]
    for i in bad[:n_show]:
        tag = f" [{tags[i]}]" if tags is not None else ""
        d = ours[i] - ref[i]
        lines.append(f"  row {i}{tag}: treescore {float(ours[i])!r} ({float(ours[i]).hex()}) "
                     f"reference {float(ref[i])!r} ({float(ref[i]).hex()}) diff {d:.3g}")
        if X is not None:
            lines.append("    x = " + _fmt_row(X[i]))
    return "\n".join(lines)


def assert_exact(ours, ref, X=None, tags=None, what="scores"):
    """Bit-exact equality of two float64 arrays (NaN never expected)."""
    ours = np.asarray(ours, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    assert ours.shape == ref.shape, f"{what}: shape {ours.shape} vs {ref.shape}"
    bad = np.flatnonzero(ours.view(np.uint64) != ref.view(np.uint64))
    if bad.size:
        pytest.fail(_mismatch_report(bad, ours, ref, X, tags, what + " (bit-exact)"), pytrace=False)


def assert_within(ours, ref, bound, X=None, tags=None, what="scores"):
    """|ours - ref| <= bound elementwise (bound: array or scalar); worst rows reported first."""
    ours = np.asarray(ours, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    assert ours.shape == ref.shape, f"{what}: shape {ours.shape} vs {ref.shape}"
    err = np.abs(ours - ref)
    bound = np.broadcast_to(np.asarray(bound, dtype=np.float64), ref.shape)
    bad = np.flatnonzero(~(err <= bound))
    if bad.size:
        ratio = err[bad] / bound[bad]
        bad = bad[np.argsort(-ratio, kind="stable")]
        pytest.fail(_mismatch_report(bad, ours, ref, X, tags, f"{what} (worst error/bound {ratio.max():.3g})"),
                    pytrace=False)


def assert_close(ours, ref, rel: float, X=None, tags=None, what="scores"):
    """|ours - ref| <= rel * max(1, |ref|) elementwise."""
    ref = np.asarray(ref, dtype=np.float64)
    assert_within(ours, ref, rel * np.maximum(1.0, np.abs(ref)), X, tags, f"{what} (tolerance {rel:g} relative)")


# ---- data files --------------------------------------------------------------------------

def fmt_f32(v) -> str:
    """A decimal that parses back (strtof, or strtod then cast) to exactly this float32."""
    v = float(v)
    if v != v:
        return "nan"
    return "%.9g" % v


def write_csv(path, X: np.ndarray, sep: str = ",", header: bool = False, label=None) -> None:
    """Features in columns 0..n-1 (after an optional label column 0 when label is given)."""
    with open(path, "w") as f:
        if header:
            names = (["label"] if label is not None else []) + [f"f{j}" for j in range(X.shape[1])]
            f.write(sep.join(names) + "\n")
        for i in range(X.shape[0]):
            cells = [fmt_f32(v) for v in X[i]]
            if label is not None:
                cells.insert(0, str(int(label[i])))
            f.write(sep.join(cells) + "\n")


def write_svmlight(path, X: np.ndarray, y, qid=None, present=None, one_based=False) -> None:
    """`label qid:Q k:v ...` with feature id k = column k (k+1 with one_based). Cells where
    present is False are left out; NaN cells are always left out."""
    with open(path, "w") as f:
        for i in range(X.shape[0]):
            parts = [str(int(y[i]))]
            if qid is not None:
                parts.append(f"qid:{int(qid[i])}")
            for j, v in enumerate(X[i]):
                if (present is not None and not present[i, j]) or np.isnan(v):
                    continue
                parts.append(f"{j + 1 if one_based else j}:{fmt_f32(v)}")
            f.write(" ".join(parts) + "\n")


def read_svmlight_dense(path, n_cols: int, absent: float = 0.0):
    """Own SVMlight reader: dense float32 [rows, n_cols], feature id k -> column k; ids >= n_cols
    are dropped (as LightGBM's predictor ignores features the model does not have)."""
    rows, labels = [], []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            labels.append(float(parts[0]))
            row = np.full(n_cols, absent, dtype=np.float32)
            for tok in parts[1:]:
                k, v = tok.split(":", 1)
                if k == "qid":
                    continue
                k = int(k)
                if k < n_cols:
                    row[k] = F32(float(v))
            rows.append(row)
    return np.vstack(rows), np.asarray(labels)


# ---- trees -----------------------------------------------------------------------------------

@dataclasses.dataclass
class Tree:
    """One tree with every split as `x <= T` (T float32). Children: node index, or -1 - leaf.

    Missing values (see exit_leaves): `rule` says whose semantics apply:
      "lightgbm"  |x| <= 1e-35f counts as 0.0; NaN counts as 0.0 unless the node's missing
                  type is NaN; missing type Zero sends 0.0 (and NaN) the default way,
                  missing type NaN sends NaN the default way;
      "xgboost"   NaN goes the default way;
      "quickrank" NaN goes right (NaN <= t is false).
    """
    feature: np.ndarray      # int, per internal node
    T: np.ndarray            # float32, per internal node
    left: np.ndarray
    right: np.ndarray
    leaf_value: np.ndarray   # float64, per leaf, left-to-right in the file's leaf order
    weight: float = 1.0
    rule: str = "quickrank"
    default_left: np.ndarray = None  # bool per internal node
    missing_type: np.ndarray = None  # LightGBM: 0 None, 1 Zero, 2 NaN
    leaf_node_id: np.ndarray = None  # XGBoost: node id of each leaf (what pred_leaf returns)


LGB_ZERO = F32(1e-35)  # LightGBM kZeroThreshold
XGB_U32 = 2.0 ** -24  # unit roundoff of float32


def exit_leaves(t: Tree, X: np.ndarray) -> np.ndarray:
    """The leaf (index into t.leaf_value) each row of the float32 matrix X reaches."""
    n_rows = X.shape[0]
    if t.feature.size == 0:
        return np.zeros(n_rows, dtype=int)
    rows = np.arange(n_rows)
    node = np.zeros(n_rows, dtype=int)
    active = np.ones(n_rows, dtype=bool)
    while active.any():
        a = rows[active]
        n = node[a]
        x = X[a, t.feature[n]]
        nan = np.isnan(x)
        if t.rule == "lightgbm":
            x = np.where(np.abs(x) <= LGB_ZERO, F32(0), x)
            mt = t.missing_type[n]
            x = np.where(nan & (mt != 2), F32(0), x)
            missing = ((mt == 1) & (x == 0)) | ((mt == 2) & nan)
            go_left = np.where(missing, t.default_left[n], x <= t.T[n])
        elif t.rule == "xgboost":
            go_left = np.where(nan, t.default_left[n], x <= t.T[n])
        else:
            go_left = x <= t.T[n]
        node[a] = np.where(go_left, t.left[n], t.right[n])
        active[a] = node[a] >= 0
    return -1 - node


def predict_trees(trees: list, X: np.ndarray, base: float = 0.0) -> np.ndarray:
    """base + sum over trees, in tree order, of weight * leaf, in double: treescore's definition."""
    X = np.asarray(X, dtype=F32)
    acc = np.full(X.shape[0], base, dtype=np.float64)
    for t in trees:
        acc = acc + t.weight * t.leaf_value[exit_leaves(t, X)]
    return acc


def lgb_le_threshold(t: float) -> np.float32:
    """Largest float32 not above the double t (LightGBM compares the widened input with t)."""
    f = F32(t)
    if float(f) > t:
        f = np.nextafter(f, F32(-np.inf))
    return f


def parse_lightgbm_text(path) -> list:
    """Trees of a LightGBM text model (numerical splits only)."""
    text = Path(path).read_text()
    trees = []
    for block in re.split(r"\nTree=\d+\n", text)[1:]:
        kv = {}
        for line in block.split("\n"):
            if line.strip() == "" and kv:
                break
            if "=" in line:
                k, v = line.split("=", 1)
                kv[k] = v
        n_leaves = int(kv["num_leaves"])
        leaf_value = np.array([float(v) for v in kv["leaf_value"].split()], dtype=np.float64)
        if n_leaves == 1:
            trees.append(Tree(np.zeros(0, int), np.zeros(0, F32), np.zeros(0, int), np.zeros(0, int), leaf_value,
                              rule="lightgbm"))
            continue
        feat = np.array([int(v) for v in kv["split_feature"].split()])
        thr = [float(v) for v in kv["threshold"].split()]
        left = np.array([int(v) for v in kv["left_child"].split()])
        right = np.array([int(v) for v in kv["right_child"].split()])
        dt = np.array([int(v) for v in kv["decision_type"].split()])
        if np.any(dt & 1):
            raise ValueError(f"{path}: categorical splits are not handled by these tests")
        T = np.array([lgb_le_threshold(t) for t in thr], dtype=F32)
        # LightGBM: child < 0 is leaf ~child, the same encoding as Tree.
        trees.append(Tree(feat, T, left, right, leaf_value, rule="lightgbm",
                          default_left=(dt & 2) != 0, missing_type=(dt >> 2) & 3))
    return trees


def xgb_model_json(path) -> dict:
    return json.loads(Path(path).read_text())


def parse_xgboost_json(path) -> list:
    """Trees of an XGBoost JSON model; `x < t` becomes `x <= nextafter(t, -inf)`."""
    j = xgb_model_json(path)
    gb = j["learner"]["gradient_booster"]
    weights = None
    if gb["name"] == "dart":
        # XGBoost keeps the dart weights as float32; the JSON text is their shortest repr.
        weights = [float(F32(w)) for w in gb["weight_drop"]]
        gb = gb["gbtree"]
    trees = []
    for ti, t in enumerate(gb["model"]["trees"]):
        lc = np.array(t["left_children"])
        rc = np.array(t["right_children"])
        cond = np.array(t["split_conditions"], dtype=F32)
        idx = np.array(t["split_indices"])
        is_leaf = lc == -1
        internal = np.flatnonzero(~is_leaf)
        leaves = np.flatnonzero(is_leaf)
        inode = {int(n): i for i, n in enumerate(internal)}
        ileaf = {int(n): i for i, n in enumerate(leaves)}

        def ref(n):
            return inode[n] if n in inode else -1 - ileaf[n]

        tree = Tree(idx[internal].astype(int),
                    np.array([np.nextafter(cond[n], F32(-np.inf)) for n in internal], dtype=F32),
                    np.array([ref(int(lc[n])) for n in internal], dtype=int),
                    np.array([ref(int(rc[n])) for n in internal], dtype=int),
                    cond[leaves].astype(np.float64),
                    weights[ti] if weights else 1.0, rule="xgboost",
                    default_left=np.array(t["default_left"], dtype=bool)[internal],
                    leaf_node_id=leaves)
        if internal.size and internal[0] != 0:
            raise ValueError("XGBoost tree whose root is not node 0")
        trees.append(tree)
    return trees


def parse_quickrank_xml(path) -> list:
    """Trees of a QuickRank XML model. Threshold = float32(float(text)), `x <= t` left,
    feature k = column k, weight and outputs as doubles."""
    text = "\n".join(l for l in Path(path).read_text().splitlines() if not l.lstrip().startswith("##"))
    root = ET.fromstring(text)
    ens = root if root.tag == "ensemble" else root.find("ensemble")
    trees = []
    for t in ens.findall("tree"):
        feat, T, left, right, leaves = [], [], [], [], []

        def build(node):
            out = node.find("output")
            if out is not None:
                leaves.append(float(out.text.strip()))
                return -len(leaves)  # == -1 - (len-1)
            i = len(feat)
            feat.append(int(node.find("feature").text.strip()))
            T.append(F32(float(node.find("threshold").text.strip())))
            left.append(0)
            right.append(0)
            kids = {s.get("pos"): s for s in node.findall("split")}
            left[i] = build(kids["left"])
            right[i] = build(kids["right"])
            return i

        r = build(t.find("split"))
        assert r in (0, -1)
        trees.append(Tree(np.array(feat, int), np.array(T, F32), np.array(left, int), np.array(right, int),
                          np.array(leaves, np.float64), float(t.get("weight")), rule="quickrank"))
    return trees


def xgb_base_margin(path) -> float:
    """XGBoost's base margin from the JSON model (in double)."""
    j = json.loads(Path(path).read_text())
    b = float(j["learner"]["learner_model_param"]["base_score"].strip("[]"))
    obj = j["learner"]["objective"]["name"]
    if obj in ("binary:logistic", "reg:logistic"):
        return float(-np.log(1.0 / b - 1.0))
    if obj in ("reg:squarederror", "rank:ndcg", "rank:pairwise", "rank:map", "reg:pseudohubererror"):
        return b
    raise ValueError(f"base margin of objective {obj} not known to the test")


def xgb_float32_error_bound(trees, X, base, ref):
    """Per-row bound on |XGBoost's float32 sum - the exact sum| (see tests/conformance/test_xgboost.py)."""
    s = np.full(X.shape[0], base, dtype=np.float64)
    acc = np.zeros(X.shape[0])
    dart = any(t.weight != 1.0 for t in trees)
    for t in trees:
        term = t.weight * t.leaf_value[exit_leaves(t, X)]
        s = s + term
        acc += np.abs(s)
        if dart:
            acc += np.abs(term)
    return XGB_U32 * (acc + 4.0 * abs(base)) * 1.01 + 1e-15 * np.maximum(1.0, np.abs(ref))


def threshold_rows(trees: list, base_rows: np.ndarray, seed: int = 5, max_nodes: int = 1500,
                   extra_values=(np.nan, 0.0)):
    """Rows that reach a split node and put exactly T, and the floats just below and above,
    on its feature (plus NaN and 0). Ancestors on the path are satisfied with values on their
    own thresholds where possible. Returns (X float32, tags)."""
    rng = np.random.default_rng(seed)
    targets = []  # (tree index, node, {feature: (lo, hi)})
    for ti, t in enumerate(trees):
        stack = [(0, {})] if t.feature.size else []
        while stack:
            n, box = stack.pop()
            targets.append((ti, n, box))
            f, T = int(t.feature[n]), t.T[n]
            lo, hi = box.get(f, (F32(-np.inf), F32(np.inf)))
            if t.left[n] >= 0:
                b = dict(box)
                b[f] = (lo, min(hi, T))
                stack.append((int(t.left[n]), b))
            if t.right[n] >= 0:
                b = dict(box)
                b[f] = (max(lo, T), hi)
                stack.append((int(t.right[n]), b))
    if len(targets) > max_nodes:
        pick = rng.choice(len(targets), size=max_nodes, replace=False)
        targets = [targets[i] for i in sorted(pick)]
    out, tags = [], []
    for ti, n, box in targets:
        t = trees[ti]
        base = base_rows[rng.integers(0, base_rows.shape[0])].copy()
        for f, (lo, hi) in box.items():
            if hi < np.inf:
                base[f] = hi
            elif lo > -np.inf:
                base[f] = np.nextafter(lo, F32(np.inf))
        f, T = int(t.feature[n]), t.T[n]
        vals = [np.nextafter(T, F32(-np.inf)), T, np.nextafter(T, F32(np.inf))] + [F32(v) for v in extra_values]
        for v in vals:
            r = base.copy()
            r[f] = v
            out.append(r)
            tags.append(f"tree {ti} node {n} f{f} T={float(T)!r} x={float(v)!r}")
    if not out:
        return np.zeros((0, base_rows.shape[1]), F32), []
    return np.vstack(out).astype(F32), tags


# ---- cache -------------------------------------------------------------------------------------

def cache_key(**params) -> str:
    import lightgbm
    import xgboost
    payload = dict(params, generator=letor_gen.GENERATOR_VERSION, lightgbm=lightgbm.__version__,
                   xgboost=xgboost.__version__, numpy=np.__version__)
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]


def cached_file(name: str, suffix: str, build, **params) -> Path:
    """CACHE_DIR/name-HASH.suffix, built by build(path) when absent (written atomically)."""
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    path = CACHE_DIR / f"{name}-{cache_key(name=name, **params)}{suffix}"
    if not path.exists():
        tmp = path.with_name(f"{path.stem}.tmp{os.getpid()}{suffix}")  # keep the suffix: XGBoost picks the format by it
        build(tmp)
        os.replace(tmp, path)
    return path
