# _sklearn.py: scikit-learn tree ensembles to treescore models through the C model builder (ts_model_builder), with scikit-learn's exact prediction rules.
"""``treescore.Model.from_sklearn(est)``: scikit-learn's trees, forests and boosting.

How each estimator predicts, and how it is rebuilt (scikit-learn 1.x, checked on 1.9):

- ``DecisionTree*``, ``RandomForest*``, ``ExtraTrees*``: X is cast to float32 and each node
  sends x left when ``x <= threshold`` (float64) holds, NaN where ``missing_go_to_left``
  says. Trees are built with ``TS_INPUT_FLOAT32`` (exact for float32 and float64 X: the
  scorer rounds double rows to float32 as scikit-learn does). A classifier's leaf holds
  the class fractions (``tree_.value``), a regressor's its value (K values for
  multi-output regression). Forests sum the trees in double in order and divide by the
  number of trees once (``_accumulate_prediction``, then ``/= len(estimators_)``): the
  C scorer sums, and the division is the same one double division.
- ``GradientBoosting*``: the init estimator's constant raw prediction, then
  ``raw += learning_rate * value`` per tree in order, on float32 X with ``x <= t``; NaN
  goes right (``predict_stages`` has no missing-value branch). Classifiers:
  ``est._loss.predict_proba`` on the raw scores (scikit-learn's own function).
- ``HistGradientBoosting*``: float64 X against float64 thresholds (``TS_INPUT_FLOAT64``),
  NaN where ``missing_go_to_left`` says, the baseline plus each iteration's trees in
  order; ``predict`` is ``est._loss.link.inverse`` (regressors) or
  ``est._loss.predict_proba`` (classifiers) of those raw scores. Categorical splits: the
  estimator's own category codes (an ``OrdinalEncoder`` of the training categories) are
  mapped back to the raw values, which must be integers in [0, 2^24); unknown categories
  and NaN go where missing values go, as in scikit-learn. A split at exactly 0.0 (common:
  bin edges of features with many zeros) is built at 1e-35f, and ``predict`` moves the
  values 0 < |x| <= 1e-35f of its column to +-2e-35 (see _ZERO_D).

``raw_score=True`` returns ``decision_function`` where the estimator has one (boosting
classifiers), the raw prediction for boosting regressors, and the sum over the trees
(before the forest's division) for trees and forests, which have no decision function.
"""

from __future__ import annotations

import numpy as np

from . import _core

_CMP_LE, _CMP_IN, _CMP_NOT_IN = 0, 4, 5
# The C scorer's double rows read |x| <= 1e-35f as 0.0 (LightGBM's rule), so the builder
# refuses float64 thresholds in [-1e-35, 1e-35). HistGradientBoosting splits at exactly 0.0
# on any feature with many zeros (its bin edges): such a split is built as "x <= 1e-35f"
# (the same test for every x but 0 < |x| <= 1e-35f), and predict moves those tiny x, of the
# columns with such splits, to +-2e-35 (the same side of every threshold as x: the other
# thresholds of the column must lie outside (-4e-35, 4e-35)).
_ZERO_D = float(np.float32(1e-35))
_TINY_SPLIT = 4e-35
_TINY_MOVED = 2e-35


def _version():
    import sklearn

    parts = []
    for p in sklearn.__version__.split(".")[:2]:
        digits = "".join(ch for ch in p if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


_SKLEARN_VERSION = (0, 0)
_F32, _F64 = 0, 1
_SUM, _MEAN = 0, 1


def _fail(status: str, msg: str):
    e = _core.Error(msg)
    e.status = status
    return e


def _tree_tuple(tree_, values, n_values, output=0, weight=1.0, input_type=_F32, missing=True):
    """The builder's 15-tuple for one scikit-learn ``Tree`` (``est.tree_``)."""
    left = np.ascontiguousarray(tree_.children_left, dtype=np.int64)
    right = np.ascontiguousarray(tree_.children_right, dtype=np.int64)
    feature = np.ascontiguousarray(tree_.feature, dtype=np.int64)
    threshold = np.ascontiguousarray(tree_.threshold, dtype=np.float64)
    miss = None
    if missing and getattr(tree_, "missing_go_to_left", None) is not None:
        miss = np.ascontiguousarray(tree_.missing_go_to_left, dtype=np.uint8)
    vals = np.ascontiguousarray(values, dtype=np.float64).reshape(-1)
    return (left, right, feature, threshold, None, miss, vals, int(n_values), int(output), float(weight),
            int(input_type), None, None, 0, 0)


def _check_fitted(est, attr):
    if not hasattr(est, attr):
        raise _fail("TS_ERR_INVALID_ARGUMENT", f"from_sklearn: {type(est).__name__} is not fitted")


def _n_features(est) -> int:
    n = getattr(est, "n_features_in_", None)
    if n is None:
        raise _fail("TS_ERR_INVALID_ARGUMENT", f"from_sklearn: {type(est).__name__} has no n_features_in_")
    return int(n)


def _names(est):
    names = getattr(est, "feature_names_in_", None)
    return None if names is None else [str(s) for s in names]


def _decision_tree(tree_est, classifier: bool):
    """(leaf values (n_nodes, K), K) of one fitted DecisionTree*."""
    t = tree_est.tree_
    n_out = int(tree_est.n_outputs_)
    if classifier:
        if n_out != 1:
            raise _fail("TS_ERR_UNSUPPORTED", "from_sklearn: multi-output classifiers are not supported "
                        f"({n_out} outputs: predict_proba returns a list of arrays)")
        k = int(np.asarray(tree_est.n_classes_).reshape(-1)[0])
        proba = t.value[:, 0, :k]
        if _SKLEARN_VERSION < (1, 4):
            # before 1.4, value held weighted counts and predict_proba normalized each row
            # (the same numpy operations on the same rows: the same bits)
            proba = np.array(proba, dtype=np.float64)
            normalizer = proba.sum(axis=1)[:, np.newaxis]
            normalizer[normalizer == 0.0] = 1.0
            proba /= normalizer
        # since 1.4, predict_proba is tree_.predict(X)[:, :n_classes_]: the stored fractions
        return proba, k
    return t.value[:, :, 0], n_out


def convert(est) -> dict:
    """The build spec of a fitted estimator: what ``_core.build`` takes, and how the raw
    scores become ``predict``'s output."""
    from sklearn import ensemble, tree  # noqa: F401  (imported only when used)

    global _SKLEARN_VERSION
    _SKLEARN_VERSION = _version()

    name = type(est).__name__
    mod = type(est).__module__
    if not mod.startswith("sklearn."):
        hint = ""
        if mod.split(".")[0] in ("lightgbm", "xgboost", "catboost"):
            hint = " (a LightGBM, XGBoost or CatBoost model: use treescore.Model.from_booster)"
        raise _fail("TS_ERR_UNSUPPORTED", f"from_sklearn: {name} is not a scikit-learn estimator{hint}")
    if isinstance(est, (tree.DecisionTreeRegressor, tree.DecisionTreeClassifier)):
        return _convert_forest(est, [est], isinstance(est, tree.DecisionTreeClassifier), single=True)
    if isinstance(est, (ensemble.RandomForestRegressor, ensemble.RandomForestClassifier,
                        ensemble.ExtraTreesRegressor, ensemble.ExtraTreesClassifier)):
        _check_fitted(est, "estimators_")
        return _convert_forest(est, list(est.estimators_),
                               isinstance(est, (ensemble.RandomForestClassifier, ensemble.ExtraTreesClassifier)),
                               single=False)
    if isinstance(est, (ensemble.GradientBoostingRegressor, ensemble.GradientBoostingClassifier)):
        return _convert_gb(est, isinstance(est, ensemble.GradientBoostingClassifier))
    if isinstance(est, (ensemble.HistGradientBoostingRegressor, ensemble.HistGradientBoostingClassifier)):
        return _convert_hgb(est, isinstance(est, ensemble.HistGradientBoostingClassifier))
    raise _fail("TS_ERR_UNSUPPORTED", f"from_sklearn: {name} is not supported (DecisionTree*, RandomForest*, "
                "ExtraTrees*, GradientBoosting* and HistGradientBoosting* regressors and classifiers are)")


def _convert_forest(est, trees, classifier, single):
    _check_fitted(trees[0], "tree_")
    n_features = _n_features(est)
    specs, k = [], None
    for t in trees:
        vals, kt = _decision_tree(t, classifier)
        if k is None:
            k = kt
        elif kt != k:
            raise _fail("TS_ERR_INVALID_MODEL", f"from_sklearn: trees of {k} and {kt} outputs in one forest")
        specs.append(_tree_tuple(t.tree_, vals, k))
    kind = "proba" if classifier else "regress"
    return {"n_features": n_features, "n_outputs": k, "aggregation": _SUM if single else _MEAN,
            "base": None, "names": _names(est), "trees": specs, "kind": kind, "k": k,
            "divisor": 0.0 if single else float(len(trees)), "loss": None}


def _convert_gb(est, classifier):
    from sklearn.dummy import DummyClassifier, DummyRegressor

    _check_fitted(est, "estimators_")
    init = est.init_
    if not (isinstance(init, str) and init == "zero") and not isinstance(init, (DummyRegressor, DummyClassifier)):
        raise _fail("TS_ERR_UNSUPPORTED", f"from_sklearn: {type(est).__name__} with init={type(init).__name__}: "
                    "only the default (Dummy*) and 'zero' initial estimators give a constant raw score")
    n_features = _n_features(est)
    x0 = np.zeros((1, n_features), dtype=np.float32)
    base = [float(v) for v in np.asarray(est._raw_predict_init(x0), dtype=np.float64).reshape(-1)]
    stages = est.estimators_
    K = stages.shape[1]
    lr = float(est.learning_rate)
    specs = []
    for i in range(stages.shape[0]):
        for k in range(K):
            t = stages[i, k].tree_
            # predict_stages: out[i, k] += scale * value[node]; NaN <= t is false: right
            specs.append(_tree_tuple(t, t.value[:, 0, 0], 1, output=k, weight=lr, missing=False))
    return {"n_features": n_features, "n_outputs": K, "aggregation": _SUM, "base": base, "names": _names(est),
            "trees": specs, "kind": "gb_proba" if classifier else "gb_regress", "k": K, "divisor": 0.0,
            "loss": est._loss if classifier else None}


def _hgb_categories(est):
    """Per original categorical feature: its raw category values (code j -> value), and the
    map from the model's (remapped) columns to the original ones."""
    n = _n_features(est)
    pre = getattr(est, "_preprocessor", None)
    if pre is None:
        return None, np.arange(n)
    enc = pre.named_transformers_["encoder"]
    cat_idx = np.flatnonzero(est.is_categorical_)
    num_idx = np.flatnonzero(~np.asarray(est.is_categorical_))
    # the ColumnTransformer's output: encoder columns first, then the numerical ones
    col_map = np.concatenate([cat_idx, num_idx]).astype(np.int64)
    values = {}
    for j, cats in zip(range(len(cat_idx)), enc.categories_):
        cats = np.asarray(cats)
        if cats.dtype.kind not in "iuf":
            raise _fail("TS_ERR_UNSUPPORTED", f"from_sklearn: categorical feature {int(cat_idx[j])} has "
                        f"non-numeric categories ({cats.dtype}): treescore reads numbers")
        c = cats.astype(np.float64)
        c = c[~np.isnan(c)]
        if len(c) and (np.any(c < 0) or np.any(c >= 2 ** 24) or np.any(c != np.floor(c))):
            raise _fail("TS_ERR_UNSUPPORTED", f"from_sklearn: categorical feature {int(cat_idx[j])} has categories "
                        "that are not integers in [0, 2^24)")
        values[j] = c.astype(np.int64)
    return values, col_map


def _convert_hgb(est, classifier):
    _check_fitted(est, "_predictors")
    n_features = _n_features(est)
    K = int(est.n_trees_per_iteration_)
    base = [float(v) for v in np.asarray(est._baseline_prediction, dtype=np.float64).reshape(-1)]
    if len(base) == 1 and K > 1:
        base = base * K
    cat_values, col_map = _hgb_categories(est)
    known = None
    if cat_values is not None:
        known, _ = est._bin_mapper.make_known_categories_bitsets()
    specs, moved, near = [], set(), []
    for it in est._predictors:
        for k, pred in enumerate(it):
            nodes = pred.nodes
            leaf = nodes["is_leaf"].astype(bool)
            left = np.where(leaf, -1, nodes["left"].astype(np.int64))
            right = np.where(leaf, -1, nodes["right"].astype(np.int64))
            feat_model = nodes["feature_idx"].astype(np.int64)
            feature = np.where(leaf, 0, col_map[feat_model])
            thr = np.where(leaf, 0.0, nodes["num_threshold"].astype(np.float64))
            miss = nodes["missing_go_to_left"].astype(np.uint8)
            vals = nodes["value"].astype(np.float64)
            cmp_ = cset = words = None
            n_sets = set_words = 0
            is_cat = nodes["is_categorical"].astype(bool) & ~leaf
            thr = _zero_splits(thr, ~leaf & ~is_cat, feature, moved, near)
            if is_cat.any():
                cmp_ = np.zeros(len(nodes), dtype=np.uint8)
                cset = np.full(len(nodes), -1, dtype=np.int64)
                sets = []
                raw_left = pred.raw_left_cat_bitsets
                f_idx_map = est._bin_mapper.make_known_categories_bitsets()[1]
                for i in np.flatnonzero(is_cat):
                    fm = int(feat_model[i])
                    codes_left = _bits(raw_left[nodes["bitset_idx"][i]])
                    codes_known = _bits(known[f_idx_map[fm]])
                    raw = cat_values[fm]  # the remapped column fm is encoder output fm
                    if miss[i]:
                        # left: members of the left set, unknown categories, NaN; right: the
                        # other known categories
                        members, cmp_[i] = [raw[c] for c in codes_known if c not in codes_left and c < len(raw)], _CMP_NOT_IN
                    else:
                        members, cmp_[i] = [raw[c] for c in codes_left if c < len(raw)], _CMP_IN
                    cset[i] = len(sets)
                    sets.append(members)
                top = max([max(s) for s in sets if len(s)] + [0])
                set_words = int(top) // 32 + 1
                n_sets = len(sets)
                words = np.zeros((n_sets, set_words), dtype=np.uint32)
                for s, members in enumerate(sets):
                    for c in members:
                        words[s, int(c) // 32] |= np.uint32(1 << (int(c) % 32))
                words = words.reshape(-1)
            specs.append((np.ascontiguousarray(left), np.ascontiguousarray(right), np.ascontiguousarray(feature),
                          np.ascontiguousarray(thr), cmp_, np.ascontiguousarray(miss), np.ascontiguousarray(vals), 1,
                          k, 1.0, _F64, cset, words, n_sets, set_words))
    bad = [(f, t) for f, t in near if f in moved]
    if bad:
        raise _fail("TS_ERR_UNSUPPORTED", f"from_sklearn: feature {bad[0][0]} has splits at 0.0 and at {bad[0][1]!r}, "
                    "within 4e-35 of 0: treescore's double rows read |x| <= 1e-35 as 0.0 and cannot score both exactly")
    return {"n_features": n_features, "n_outputs": K, "aggregation": _SUM, "base": base, "names": _names(est),
            "trees": specs, "kind": "hgb_proba" if classifier else "hgb_regress", "k": K, "divisor": 0.0,
            "loss": est._loss, "tiny_columns": sorted(int(c) for c in moved)}


def _zero_splits(thr, numeric, feature, moved, near):
    """The thresholds with each split at 0.0 as 1e-35f (see _ZERO_D); its column joins
    `moved`. Other thresholds within 4e-35 of 0 go to `near` as (column, threshold): a
    column with both is refused (those in [-1e-35, 1e-35) the builder refuses anyway)."""
    tiny = numeric & (np.abs(thr) < _TINY_SPLIT)
    if not tiny.any():
        return thr
    zero = tiny & (thr == 0.0)
    moved.update(feature[zero].tolist())
    near.extend(zip(feature[tiny & ~zero].tolist(), thr[tiny & ~zero].tolist()))
    return np.where(zero, _ZERO_D, thr)


def _move_tiny(X, cols):
    """X with the values 0 < |x| <= 1e-35f of columns `cols` moved to +-2e-35 (a copy when
    there are any; see _ZERO_D)."""
    if X.ndim != 2 or X.shape[1] <= max(cols):
        return X  # the scorer names the shape error
    sub = X[:, cols]
    tiny = (sub != 0) & (np.abs(sub) <= _ZERO_D)
    if not tiny.any():
        return X
    X = X.copy()
    X[:, cols] = np.where(tiny, np.copysign(_TINY_MOVED, sub), sub)
    return X


def _bits(row) -> set:
    """The members of one scikit-learn bitset row (8 uint32 words: categories 0-255)."""
    out = set()
    for w, word in enumerate(np.asarray(row, dtype=np.uint32)):
        word = int(word)
        while word:
            b = word & -word
            out.add(w * 32 + b.bit_length() - 1)
            word ^= b
    return out


def build(spec: dict):
    """The ``_core.Model`` of a build spec."""
    return _core.build(spec["n_features"], spec["n_outputs"], spec["aggregation"], spec["base"], spec["names"],
                       spec["trees"])


def finish(spec: dict, raw: np.ndarray, raw_score: bool):
    """``predict``'s output from the C scorer's raw scores (n,) or (n, K), as the
    estimator computes it from its own raw predictions."""
    kind = spec["kind"]
    k = spec["k"]
    if kind in ("proba", "regress"):
        if kind == "proba" and raw.ndim == 1:
            raw = raw.reshape(-1, 1)
        return raw  # the forest's division is done in C (the scorer's divisor) unless raw_score
    if kind == "gb_regress":
        return raw.reshape(-1) if k == 1 else raw
    if kind == "hgb_regress":
        r = raw.reshape(-1)
        return r if raw_score else spec["loss"].link.inverse(r)
    raw2 = raw.reshape(-1, k)
    if kind == "gb_proba":
        dec = raw2.ravel() if k == 1 else raw2
        return dec if raw_score else spec["loss"].predict_proba(dec)
    # hgb_proba: raw_predictions is an (n, K) Fortran array there
    if raw_score:
        return raw2.ravel() if k == 1 else raw2
    return spec["loss"].predict_proba(np.asfortranarray(raw2))


# ---- the Model ------------------------------------------------------------------------

from . import Model as _Model  # noqa: E402  (this module is imported after the package)
from . import _inputs  # noqa: E402


def _ints_alike(dtypes) -> bool:
    """Whether pandas converts a frame of these dtypes to float32 from one integer type
    (each value rounded once, as scikit-learn's trees read an all-int64 frame); a frame
    mixing integers with floats (or int64 with uint64) goes through float64 there, so its
    integers are rounded twice, and so are they here."""
    try:
        kinds = [np.dtype(getattr(d, "numpy_dtype", d)) for d in dtypes]
    except TypeError:
        return False
    return bool(kinds) and all(k.kind in "iu" for k in kinds) and np.result_type(*kinds).kind in "iu"


class SklearnModel(_Model):
    """A ``treescore.Model`` built from a fitted scikit-learn estimator
    (``Model.from_sklearn``): ``predict`` returns what the estimator's ``predict``
    (regressors) or ``predict_proba`` (classifiers) returns; see the module's notes."""

    def __init__(self, *args, **kwargs):
        raise TypeError("build it with treescore.Model.from_sklearn(estimator)")

    @classmethod
    def _create(cls, spec: dict, estimator_name: str, engine: str = "auto", isa=None, threads: int = 0,
                batch_hint: int = 0, sample=None):
        self = cls.__new__(cls)
        self._setup_spec(spec, estimator_name, engine, isa, threads, batch_hint, sample)
        return self

    def _setup_spec(self, spec, estimator_name, engine, isa, threads, batch_hint, sample=None):
        import threading
        from collections import OrderedDict

        if not isinstance(engine, str):
            raise TypeError("engine must be a string")
        if isa is not None and not isinstance(isa, str):
            raise TypeError("isa must be a string or None")
        self._spec = spec
        self._estimator_name = estimator_name
        self._data = b""
        self._name = f"<{estimator_name}>"
        self._format_arg = "sklearn"
        self._engine_arg = engine
        self._isa_arg = isa
        self._threads = _inputs.count(threads, "threads", negative_means_all=True)
        self._batch_hint = _inputs.count(batch_hint, "batch_hint", negative_means_all=False)
        self._core = build(spec)
        self._info = self._core.info()
        self._info["format"] = "sklearn"
        self._info["estimator"] = estimator_name
        self._names = self._core.feature_names()
        self._lightgbm = False
        self._float32_ints = not spec["kind"].startswith("hgb")  # the trees read float32
        self._lock = threading.Lock()
        self._scorers = OrderedDict()
        self._cats = None
        self._sample = None
        if sample is not None:  # as Model reads one: sparse too, errors naming the sample
            self._sample = self._sample_rows(sample)
        self._scorer = self._make_scorer(self._threads)
        self._transform = (0, 1.0, spec["divisor"])

    def predict(self, X, raw_score: bool = False, *args, n_jobs=None, **kwargs):
        """The estimator's ``predict`` (regressors) or ``predict_proba`` (classifiers) of
        ``X``; ``raw_score=True``: its ``decision_function`` (boosting classifiers), the
        raw prediction (boosting regressors), or the sum over the trees (trees and forests,
        before the forest's division). ``X`` and ``n_jobs`` as for ``Model.predict``."""
        if args or kwargs or (raw_score is not False and raw_score is not True):
            _inputs.predict_options(raw_score, args, kwargs)
        s = self._scorer if n_jobs is None else self._scorer_for(n_jobs)
        tr = (0, 1.0, 0.0) if raw_score else self._transform
        cols = self._spec.get("tiny_columns")
        if cols:
            # HistGradientBoosting takes no sparse input; read it densely here
            X = self._as_matrix(X.toarray() if _inputs.is_sparse(X) else X)
            X = _move_tiny(X, cols)
        y = s.score(X, *tr)
        if y is NotImplemented:
            y = self._predict_converted(s, X, tr)
        return finish(self._spec, y, raw_score)

    def _as_matrix(self, X):
        # scikit-learn reads a DataFrame by its names (feature_names_in_) and a categorical
        # column by its values (its OrdinalEncoder maps them): take the values, not the
        # pandas codes that Model takes for LightGBM's sake
        frame = _inputs.arrow_frame(X, self._names)  # pyarrow, polars: by name, as pandas
        X = X if frame is None else frame
        if _inputs.is_dataframe(X):
            # by name as Model matches frames (a missing or repeated name refused, pandas'
            # default labels by position); X[names] took both columns of a repeated name
            order = _inputs.frame_columns(list(X.columns), self._names, self.num_features, False)
            if order is not None:
                X = X.iloc[:, order]
            once = self._float32_ints and _ints_alike(X.dtypes)
            cols = []
            for c in range(X.shape[1]):
                col = X.iloc[:, c]
                if hasattr(col, "cat"):
                    col = col.astype(object)
                # text is refused naming the column (pandas' own "could not convert
                # string to float: 'x'" named none)
                cols.append(_inputs._column_values(col, X.columns[c], once))
            return np.ascontiguousarray(np.column_stack(cols) if cols else np.empty((len(X), 0)))
        # the trees and forests read float32 (an integer array rounded once, as scikit-learn
        # converts it), HistGradientBoosting float64
        return _inputs.dense_matrix(X, float32=self._float32_ints, arrow_too=True)

    @property
    def estimator(self) -> str:
        """The class name of the estimator the model was built from."""
        return self._estimator_name

    def __repr__(self) -> str:
        return (f"treescore.Model(sklearn {self._estimator_name}, {self.num_trees} trees, "
                f"{self.num_features} features, engine={self.engine!r})")

    def __getstate__(self):
        return {"spec": self._spec, "estimator": self._estimator_name, "engine": self._engine_arg,
                "isa": self._isa_arg, "threads": self._threads, "batch_hint": self._batch_hint}

    def __setstate__(self, state):
        self._setup_spec(state["spec"], state["estimator"], state["engine"], state["isa"], state["threads"],
                         state["batch_hint"])
