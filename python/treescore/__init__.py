# __init__.py: the treescore Python package: Model loads a LightGBM/XGBoost/QuickRank model and predicts like the training library.
"""treescore: fast exact scoring of tree ensembles, a drop-in for ``Booster.predict`` and lleaves.

>>> import treescore
>>> m = treescore.Model(model_file="model.txt")        # LightGBM, XGBoost JSON/UBJSON, QuickRank, ...
>>> y = m.predict(X)                                   # (n,) float64, the objective's transform applied
>>> margin = m.predict(X, raw_score=True)              # the raw score (margin)

Raw scores are those of the C library: LightGBM's ``predict(raw_score=True)`` bit for bit
(on float64 input and on float32 input alike), XGBoost's margin up to XGBoost's own float32
summation (treescore adds in double). Transformed outputs are computed as the training
library computes them: in double for LightGBM (bit-identical to ``Booster.predict``), in
float32 from the float32 margin for XGBoost (returned as float64 holding that float32).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict

import numpy as np

from . import _core
from . import _inputs
from . import _objectives
from ._inputs import error as _error

__all__ = ["Model", "Error", "__version__"]

#: The C library's version string (``ts_version_string()``).
__version__: str = _core.version

#: Raised for bad models, bad data and failed library calls (a ``ValueError``); its
#: ``status`` attribute names the C status (``"TS_ERR_PARSE"``, ``"TS_ERR_SHAPE"``, ...),
#: also when the Python layer raises it.
Error = _core.Error

_core._set_numpy(np.empty)

#: Scorers kept for ``predict(n_jobs=...)`` counts other than the model's own (least
#: recently used first out): each holds the engine's prepared tables.
_SCORERS_KEPT = 4
# Formats whose library converts integer (and other non-float) arrays to float32 itself,
# in one rounding (LightGBM is told by its own flag): XGBoost's DMatrix, CatBoost's pool.
_FLOAT32_FORMATS = ("xgboost", "xgboost-ubjson", "xgboost-dump", "catboost", "catboost-json")


def _catboost_bytes(model) -> bytes:
    """The .cbm bytes of a fitted CatBoost model: ``_serialize_model()`` (what CatBoost's
    own pickling uses) when it gives a CBM1 buffer, else ``save_model`` into a private
    temporary directory, always removed."""
    fitted = getattr(model, "is_fitted", None)
    if fitted is not None and not fitted():
        raise _error("TS_ERR_INVALID_ARGUMENT", f"from_booster: the {type(model).__name__} is not fitted")
    serialize = getattr(model, "_serialize_model", None)
    if serialize is not None:
        try:
            data = bytes(serialize())
        except Exception:  # noqa: BLE001 - a private method that may change: fall back to a file
            data = b""
        if data[:4] == b"CBM1":
            return data
    import shutil
    import tempfile
    d = tempfile.mkdtemp(prefix="treescore-cb-")
    try:
        path = os.path.join(d, "model.cbm")
        model.save_model(path, format="cbm")
        return _inputs.read_model_file(path)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _xgboost_best_rounds(estimator):
    """The booster of a fitted ``XGBModel`` cut to the rounds its ``predict`` uses: after
    early stopping the first ``best_iteration + 1`` (XGBModel's default iteration_range),
    the booster itself keeping the rounds trained past the best one."""
    booster = estimator.get_booster()
    try:
        best = int(estimator.best_iteration)
    except (AttributeError, TypeError, ValueError):  # no early stopping: every round
        return booster
    if 0 <= best and best + 1 < booster.num_boosted_rounds():
        try:
            booster = booster[:best + 1]
        except Exception as e:  # noqa: BLE001 - gblinear cannot be sliced: the loader refuses it by name
            if '"gblinear"' not in booster.save_config():
                raise _error("TS_ERR_UNSUPPORTED", f"from_booster: cannot keep the {type(estimator).__name__}'s "
                                                   f"first best_iteration + 1 = {best + 1} rounds: {e}") from None
    return booster


def _xgboost_missing(estimator):
    """An ``XGBModel``'s ``missing`` value as float32 (XGBoost compares float32 values
    with it), or None for NaN (the default: nothing to mark)."""
    m = getattr(estimator, "missing", None)
    if m is None:
        return None
    m = np.float32(m)
    return None if np.isnan(m) else m


class Model:
    """A tree ensemble loaded for fast exact scoring.

    Load from a file (``model_file``), from memory (``model_str``: ``str`` or ``bytes``), or
    from a live booster (``Model.from_booster``). The format is detected from the content;
    ``model_format`` forces it (any name the C library knows: ``"lightgbm"``,
    ``"xgboost"``, ``"xgboost-ubjson"``, ``"lightgbm-json"``, ``"quickrank"``, ``"onnx"``, ...).
    For an ONNX model ``predict`` applies the tree node's ``post_transform`` as ONNX Runtime
    writes it and ``raw_score=True`` returns the scores before it.

    ``engine``: ``"auto"`` (the planner times the engines for this model and machine and
    keeps the fastest), or one of ``naive``, ``qs``, ``vqs``, ``ifelse``, ``vpred``,
    ``block-naive``, ``block-vpred``, ``rapid``, ``trees-simd``, ``oblivious``, ``deep``
    (and ``gpu-naive``, ``gpu`` where built with CUDA); all give the same bits. ``isa`` caps the instruction
    set (``"scalar"``, ``"sse4.2"``, ``"avx2"``, ``"avx512"``; ``None``: the best the CPU
    has). ``threads``: threads per ``predict`` call, 0 (default) or negative = all cores.
    ``batch_hint``: the rows per call ``auto`` plans for (0, the default: every range of
    rows per call, each call then using its range's engine; see ``plan_report``). Both are integers up to
    2^32 - 1 (larger values, floats and a negative batch_hint are refused, never wrapped).
    ``model_file`` must be a regular file of at most ``_core.max_model_bytes`` (4 GiB, the C
    loader's limit); FIFOs and devices are refused (read them yourself and pass
    ``model_str``). ``sample``: rows of the data to be scored (any input ``predict``
    takes; the first 4,096 rows, of sparse input at most 32 MiB of dense rows, are kept
    until the engines are planned), for ``auto`` to time the engines on real rows rather
    than synthetic ones (branchy engines run faster on real data; without it, ranges whose
    two fastest engines timed close are decided by their first ``predict`` calls), and for
    ``rapid`` (chosen by ``auto`` or by name) to put the leaves these rows reach most first
    (the same scores, up to 1.2-1.3x faster on LightGBM and scikit-learn models).

    A Model is immutable and thread-safe: many Python threads may call ``predict`` at once
    (the GIL is released while scoring). It pickles as its model bytes and options; the
    engine is prepared again when it is unpickled (Dask, Spark, multiprocessing).
    """

    _missing = None  # an XGBModel's missing value (float32), marked NaN in predict (from_booster)
    _variance = False  # CatBoost RMSEWithUncertainty: predict's second column exp(2 raw)

    def __init__(self, model_file=None, model_str=None, *, model_format: str = "auto", engine: str = "auto",
                 isa=None, threads: int = 0, batch_hint: int = 0, sample=None):
        if (model_file is None) == (model_str is None):
            raise TypeError("Model() needs exactly one of model_file= and model_str=")
        if model_file is not None:
            if not isinstance(model_file, (str, bytes, os.PathLike)):
                raise TypeError(f"model_file must be a file name (str, bytes or os.PathLike), not "
                                f"{type(model_file).__name__}: a live model goes to Model.from_booster (LightGBM, "
                                f"XGBoost, CatBoost) or Model.from_sklearn (scikit-learn)")
            name = os.fspath(model_file)
            data = _inputs.read_model_file(name)
            name = os.fsdecode(name)
        else:
            if isinstance(model_str, str):
                data = model_str.encode("utf-8")
            elif isinstance(model_str, (bytes, bytearray, memoryview)):
                data = bytes(model_str)
            else:
                raise TypeError(f"model_str must be str or bytes, not {type(model_str).__name__}")
            name = "<model_str>"
        self._setup(data, name, model_format, engine, isa, threads, batch_hint, sample)

    def _setup(self, data: bytes, name: str, model_format, engine, isa, threads, batch_hint=0, sample=None) -> None:
        if not isinstance(model_format, str):
            raise TypeError("model_format must be a string")
        if not isinstance(engine, str):
            raise TypeError("engine must be a string")
        if isa is not None and not isinstance(isa, str):
            raise TypeError("isa must be a string or None")
        threads = _inputs.count(threads, "threads", negative_means_all=True)
        batch_hint = _inputs.count(batch_hint, "batch_hint", negative_means_all=False)
        self._data = data
        self._name = name
        self._format_arg = model_format
        self._engine_arg = engine
        self._isa_arg = isa
        self._threads = threads
        self._batch_hint = batch_hint
        self._core = _core.load(data, model_format, name)
        self._info = self._core.info()
        self._names = self._core.feature_names()
        self._lightgbm = self._info["format"].startswith("lightgbm")
        # formats whose library rounds an integer array to float32 in one step (_as_matrix)
        self._float32_ints = self._lightgbm or self._info["format"] in _FLOAT32_FORMATS
        self._lock = threading.Lock()
        self._scorers = OrderedDict()
        self._sample = None
        self._cats = False  # not read yet (_pandas_categories)
        self._missing = None
        if sample is not None:
            self._sample = self._sample_rows(sample)
        self._scorer = self._make_scorer(threads)
        fmt = self._info["format"]
        line = _objectives.lightgbm_objective_line(data) if fmt.startswith("lightgbm") else ""
        try:
            code, param = _objectives.transform_for(fmt, self._info["objective"], line, self._scorer.n_outputs)
        except ValueError as e:
            raise Error(f"{name}: objective '{line}': {e}") from None
        divisor = 0.0
        if self._info["average_output"]:
            divisor = float(self._info["n_trees"] // max(1, self._scorer.n_outputs))
        self._transform = (code, param, divisor)
        # CatBoost's binary Probability: two columns [1 - p, p] from the one score
        self._two_columns = _objectives.catboost_two_columns(fmt, self._info["objective"], self._scorer.n_outputs)
        # CatBoost's RMSEWithUncertainty: [mean, exp(2 raw)], the variance, as CatBoostRegressor.predict
        self._variance = _objectives.catboost_variance(fmt, self._info["objective"], self._scorer.n_outputs)
        # ONNX: raw scores are the tree node's (the mean for AVERAGE); predict applies its
        # post_transform as ONNX Runtime does (_objectives.onnx_post_transform)
        self._onnx_post = _objectives.onnx_post_transform(self._info["objective"]) if fmt == "onnx" else None

    def _sample_rows(self, sample):
        """The sample (the planner times the engines on it, rapid orders its leaves by it) as
        float32 rows (at most 4096); errors name ``sample``, not X."""
        try:
            if _inputs.is_sparse(sample):
                sp = _inputs.SparseRows(sample, self.num_features, self._core.absent_value())
                rows = sp.dense(0, min(sp.n, 4096, max(1, _inputs.SPARSE_CHUNK_VALUES // max(1, sp.width))))
            elif _inputs.is_dataframe(sample):
                rows = self._as_matrix(sample.iloc[:4096])
            else:
                rows = self._as_matrix(sample[:4096] if isinstance(sample, np.ndarray) else sample)
        except (Error, TypeError) as e:
            msg = str(e)
            msg = "sample" + msg[1:] if msg.startswith("X ") else "sample: " + msg
            if isinstance(e, Error):
                raise _error(e.status, msg) from None
            raise TypeError(msg) from None
        return np.ascontiguousarray(rows[:4096], dtype=np.float32)

    def _make_scorer(self, threads: int):
        return self._core.scorer(self._engine_arg, self._isa_arg or "auto", threads, self._batch_hint,
                                 self._sample)

    def _scorer_for(self, n_jobs):
        """The scorer for ``n_jobs`` threads: the model's own, or one of the last
        _SCORERS_KEPT other counts asked for (made on first use; a scorer still scoring
        in another thread when it leaves the cache lives until that call returns)."""
        n = _inputs.count(n_jobs, "n_jobs", negative_means_all=True)
        if n == self._threads:
            return self._scorer
        with self._lock:
            s = self._scorers.get(n)
            if s is None:
                s = self._make_scorer(n)
                self._scorers[n] = s
                while len(self._scorers) > _SCORERS_KEPT:
                    self._scorers.popitem(last=False)
            else:
                self._scorers.move_to_end(n)
        return s

    # ---- loading from a live booster --------------------------------------------------

    @classmethod
    def from_booster(cls, booster, **kwargs) -> "Model":
        """A Model from a live ``lightgbm.Booster`` / ``LGBMModel`` (its ``model_to_string()``),
        ``xgboost.Booster`` / ``XGBModel`` (its ``save_raw("json")``; an ``XGBModel`` fitted
        with early stopping keeps its first ``best_iteration + 1`` rounds, as its ``predict``
        does, a ``Booster`` every round, as its ``predict`` does; an ``XGBModel``'s
        ``missing`` value, when not NaN, is missing to ``predict`` as it is to XGBoost: every
        value whose float32 equals it) or fitted CatBoost model
        (``CatBoost``, ``CatBoostRegressor``, ``CatBoostClassifier``, ``CatBoostRanker``: its
        .cbm bytes, serialized in memory, or through a private temporary file that is removed
        afterwards when the catboost package offers no in-memory form). ``kwargs``: the
        options of ``Model()`` (engine, isa, threads, batch_hint, sample)."""
        root = type(booster).__module__.split(".")[0]
        if root == "lightgbm":
            if type(booster).__name__ == "CVBooster":
                raise TypeError("from_booster: a lightgbm CVBooster holds one booster per fold; pass one of its "
                                "boosters (cvbooster.boosters[i])")
            if not hasattr(booster, "model_to_string") and hasattr(booster, "booster_"):
                booster = booster.booster_
            return cls(model_str=booster.model_to_string(), model_format="lightgbm", **kwargs)
        if root == "xgboost":
            missing = None
            if not hasattr(booster, "save_raw") and hasattr(booster, "get_booster"):
                missing = _xgboost_missing(booster)
                booster = _xgboost_best_rounds(booster)
            model = cls(model_str=bytes(booster.save_raw("json")), model_format="xgboost", **kwargs)
            model._missing = missing
            return model
        if root == "catboost" and hasattr(booster, "save_model"):
            return cls(model_str=_catboost_bytes(booster), model_format="catboost", **kwargs)
        raise TypeError(f"from_booster: expected a LightGBM, XGBoost or CatBoost model, not {type(booster).__name__}")

    @classmethod
    def from_sklearn(cls, estimator, **kwargs) -> "Model":
        """A Model from a fitted scikit-learn ``DecisionTree``, ``RandomForest``,
        ``ExtraTrees``, ``GradientBoosting`` or ``HistGradientBoosting`` regressor or
        classifier, built in memory through the C model builder (no file). ``predict(X)``
        returns the estimator's ``predict`` (regressors) or ``predict_proba`` (classifiers),
        same shape, computed as scikit-learn computes it (float32 X for its trees, float64
        for HistGradientBoosting; sums in tree order, then the forest's division);
        ``raw_score=True`` gives ``decision_function`` where the estimator has one. Other
        estimators, multi-output classifiers and non-constant GradientBoosting ``init``
        estimators are refused with ``Error``. ``kwargs``: the options of ``Model()``
        (engine, isa, threads, batch_hint, sample)."""
        from . import _sklearn
        return _sklearn.SklearnModel._create(_sklearn.convert(estimator), type(estimator).__name__, **kwargs)

    # ---- scoring ----------------------------------------------------------------------

    def predict(self, X, raw_score: bool = False, *args, n_jobs=None, **kwargs):
        """Scores of the rows of ``X``: float64 of shape (n,), or (n, K) for a model with K
        outputs (multiclass), or (n, 2) for a binary CatBoost classifier (below).

        ``X``: a 2-D numpy array or any 2-D buffer (float32 and float64 in C order are scored
        in place, without a copy; Fortran order, negative strides and other numeric dtypes
        are converted once: for a LightGBM model to float32, as ``Booster.predict``
        converts them, so an integer past 2^24 is scored as its nearest float32, as there;
        else to float64), a pandas DataFrame, a scipy.sparse matrix or array of any
        format (absent entries mean what they mean to the training library: 0.0 for
        LightGBM and QuickRank, missing for XGBoost; only the model's columns are expanded),
        or a list of lists. NaN is a missing value.

        Columns, by position or by name:

        - arrays, lists, sparse input and DataFrames with pandas' default labels 0..n-1 are
          taken by position, as every training library takes them (unless the model's
          names are those integers in another order, trained on ``df[[2, 0, 1]]``: then
          by name); columns past the model's features are ignored;
        - a DataFrame with other labels, scored by a model that stores feature names
          (``Column_i`` and ``f{i}`` included), is matched by name: each model feature is
          the column of that name (``str(label)``; for LightGBM, spaces read as underscores,
          as LightGBM stores them); a missing name, or a name two columns share, raises
          Error; columns the model does not name are ignored wherever they sit. XGBoost
          itself refuses a DataFrame whose names differ from the model's in any way (order,
          extra columns); LightGBM 4.7 takes a DataFrame by position whatever its names
          (unless ``validate_features=True``). treescore never falls back to position for
          a named DataFrame: ``X.to_numpy()`` scores by position explicitly;
        - a pyarrow Table or polars DataFrame is matched by name as a pandas DataFrame
          (converted with ``to_pandas()``; polars' default names column_0.. are positional);
        - a model without feature names (XGBoost trained on arrays, QuickRank, RankLib)
          takes every input by position, as XGBoost does.

        NA of nullable dtypes is missing; categorical columns are read as their codes,
        LightGBM's training categories first set as ``Booster.predict`` does, or XGBoost's
        (an XGBoost 3.1+ JSON or UBJSON model's ``cats``: XGBoost re-codes categories by value; one
        unseen in training is refused, as XGBoost refuses it).

        CatBoost models (.cbm, JSON, ``from_booster``): categorical features are pandas
        object, string or category columns, or integer columns (the integer 3 is the
        category "3", as in CatBoost), or the columns of a numpy array or list of integers
        or objects, read by value as CatBoost reads them (a float array holds the model's
        category ids). ``predict`` returns what CatBoost's
        ``predict(prediction_type="Probability")`` returns, in its shape, so that one can
        stand for the other: for Logloss and CrossEntropy (binary) an (n, 2) array
        [1 - p, p], p = 1 / (1 + exp(-raw)) (CatBoost's bits); for MultiClass the softmax,
        (n, K) (within 1e-14 relative of CatBoost's, whose exponentials are its own fast
        approximation; the sum runs over the classes in order, as CatBoost's); for
        MultiLogloss, MultiCrossEntropy and MultiClassOneVsAll a sigmoid per class, (n, K);
        for Poisson and Tweedie exp(raw), what ``CatBoostRegressor.predict`` returns
        (prediction_type "Exponent"; within 1e-15 relative, CatBoost's exponential being its
        own fast approximation); for RMSEWithUncertainty (n, 2) [mean, exp(2 raw)], the
        variance, as ``CatBoostRegressor.predict`` (the same bound). Every other objective
        (RMSE, YetiRank, PairLogit, QueryRMSE, MultiRMSE, ...) gives the raw score, (n,) or (n, K). ``raw_score=True`` gives CatBoost's
        ``RawFormulaVal``: (n,), or (n, K) for K outputs.

        ``raw_score=True`` returns the raw score (margin) without the objective's
        transform. ``n_jobs`` overrides the model's thread count for this call (0 or
        negative = all cores, at most 2^32 - 1); the first call with a new count prepares a
        scorer for it (with ``engine="auto"``, the planner's timing), and the last few
        counts used are kept for the next calls. ``raw_score`` must be True or False and
        ``n_jobs`` is keyword-only (LightGBM's ``predict(X, 0, 10)`` means iterations, not
        these); the training libraries' other arguments (``num_iteration``,
        ``iteration_range``, ``pred_leaf``, ``num_threads``, ...) raise TypeError saying
        what to use instead: every tree of the model is scored."""
        if args or kwargs or (raw_score is not False and raw_score is not True):
            _inputs.predict_options(raw_score, args, kwargs)
        s = self._scorer if n_jobs is None else self._scorer_for(n_jobs)
        if self._onnx_post is not None:
            y = s.score(X, *self._transform)
            if y is NotImplemented:
                y = self._predict_converted(s, X, self._transform)
            try:
                return y if raw_score else self._onnx_post(y)
            except ValueError as e:
                raise Error(f"{self._name}: {e}") from None
        if self._missing is not None:  # an XGBModel(missing=m): m is missing, as it is to XGBoost
            return self._predict_converted(s, X, (0, 1.0, 0.0) if raw_score else self._transform)
        # the fast path (a dense float32/float64 matrix) is one C call: keep it short
        y = s.score(X) if raw_score else s.score(X, *self._transform)
        if y is NotImplemented:
            y = self._predict_converted(s, X, (0, 1.0, 0.0) if raw_score else self._transform)
        if self._two_columns and not raw_score:
            y = np.stack((1.0 - y, y), axis=1)
        elif self._variance and not raw_score:
            y = np.stack((y[:, 0], np.exp(2.0 * y[:, 1])), axis=1)
        return y

    def _predict_converted(self, s, X, tr):
        if _inputs.is_sparse(X):
            return self._predict_sparse(s, X, tr)
        y = s.score(self._marked(self._as_matrix(X)), tr[0], tr[1], tr[2])
        if y is NotImplemented:  # cannot happen: _as_matrix gives C-ordered float64/float32
            raise _error("TS_ERR_GENERIC", "internal error: converted input was refused")
        return y

    def _marked(self, M):
        """M with the values whose float32 equals the XGBModel's ``missing`` made NaN (a copy
        when there are any), or M itself when the model has no such value."""
        if self._missing is None:
            return M
        with np.errstate(over="ignore", invalid="ignore"):
            hit = M.astype(np.float32, copy=False) == self._missing
        return np.where(hit, np.nan, M).astype(M.dtype, copy=False) if hit.any() else M

    def _as_matrix(self, X):
        frame = _inputs.arrow_frame(X, self._names)  # pyarrow, polars: by name, as pandas
        X = X if frame is None else frame
        hashed = self.__dict__.get("_hashed")
        if hashed is None:  # the model's CatBoost categorical columns, asked once
            hashed = self._hashed = self._core.categorical_columns()
        if _inputs.is_dataframe(X):
            return _inputs.frame_matrix(X, self._names, self.num_features, self._lightgbm,
                                        self._pandas_categories,
                                        (hashed, self._core.category_ids) if hashed else None,
                                        refuse_unseen=self.model_format in ("xgboost", "xgboost-ubjson"),
                                        model_categorical=self._categorical_features,
                                        float32_ints=self._info["format"] in _FLOAT32_FORMATS)
        if hashed:  # CatBoost: integer and object arrays are categories by value, as there
            rows = _inputs.categorical_rows(X, hashed, self.num_features, self._core.category_ids)
            if rows is not None:
                return rows
        return _inputs.dense_matrix(X, float32=self._float32_ints, arrow_too=not self._lightgbm)

    def _categorical_features(self):
        """The model features trained as categorical (LightGBM text, XGBoost), or None;
        read once, when a DataFrame lacks a categorical column."""
        got = self.__dict__.get("_cat_features", False)
        if got is False:
            got = self._cat_features = _inputs.categorical_features(self._data, self.model_format)
        return got

    def _pandas_categories(self):
        """LightGBM's training categories (``pandas_categorical`` of the model: one list per
        categorical column), or XGBoost's (its JSON or UBJSON ``cats``), or None; read from the model
        once, when first needed."""
        if self._cats is not False:
            return self._cats
        import json
        cats = None
        if self.model_format == "lightgbm":
            i = self._data.rfind(b"\npandas_categorical:")
            if i >= 0:
                line = self._data[i + 20:].split(b"\n", 1)[0]
                try:
                    cats = json.loads(line)
                except ValueError:
                    cats = None
        elif self.model_format == "lightgbm-json":  # dump_model() keeps them as a key
            try:
                cats = json.loads(self._data).get("pandas_categorical")
            except (ValueError, AttributeError):
                cats = None
        elif self.model_format in ("xgboost", "xgboost-ubjson"):  # XGBoost 3.1+: the training categories
            cats = _inputs.xgboost_training_categories(self._data, self.model_format == "xgboost-ubjson")
        self._cats = cats if isinstance(cats, list) and all(isinstance(c, list) for c in cats) else None
        return self._cats

    def _packed_scorer(self, s):
        """For a model reading few of many declared columns (``columns_for``: LightGBM's
        max_feature_idx=16777215 with a few splits): (the columns, a packed scorer of s's
        thread count, made once), so that sparse rows expand to those columns alone rather
        than to 128 MiB rows of 2^24 doubles (22 ms a row); else (None, s)."""
        cols = self.__dict__.get("_packed_cols", False)
        if cols is False:
            got = self._core.columns_for()
            cols = self._packed_cols = None if got is None else np.asarray(got, dtype=np.int64)
        if cols is None:
            return None, s
        with self._lock:
            packed = self.__dict__.setdefault("_packed_scorers", {})
            p = packed.get(s.n_threads)
            if p is None:
                sample = None if self._sample is None else np.ascontiguousarray(self._sample[:, cols])
                p = packed[s.n_threads] = self._core.scorer(self._engine_arg, self._isa_arg or "auto", s.n_threads,
                                                            self._batch_hint, sample, True)
        return cols, p

    def _predict_sparse(self, s, X, tr):
        keep, s = self._packed_scorer(s)
        # integer entries rounded to float32 once, as XGBoost and scikit-learn read them, after
        # the structure is checked (scipy's astype of a malformed matrix raised its own error)
        sp = _inputs.SparseRows(X, self.num_features, self._core.absent_value(), keep,
                                float32_ints=self._float32_ints and not self._lightgbm)
        parts = [s.score(self._marked(sp.dense(r0, r1)), tr[0], tr[1], tr[2]) for r0, r1 in sp.chunks()]
        if not parts:
            return s.score(np.empty((0, self.num_features if keep is None else len(keep))), tr[0], tr[1], tr[2])
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    # ---- what the model is ------------------------------------------------------------

    @property
    def num_trees(self) -> int:
        """Trees in the model (all outputs)."""
        return self._info["n_trees"]

    @property
    def num_features(self) -> int:
        """Columns a row must have."""
        return self._info["n_features"]

    @property
    def num_outputs(self) -> int:
        """Scores per row: 1, or K for a multiclass / multi-output model."""
        return self._scorer.n_outputs

    @property
    def feature_names(self):
        """The feature names the model file gives (LightGBM ``feature_names``, XGBoost
        ``feature_names``), or None when it gives none."""
        return None if self._names is None else list(self._names)

    @property
    def engine(self) -> str:
        """The engine the default scorer uses (what ``auto`` picked)."""
        return self._scorer.engine

    @property
    def isa(self) -> str:
        """The instruction set the engine uses."""
        return self._scorer.isa

    @property
    def threads(self) -> int:
        """Threads per ``predict`` call (``threads`` of the constructor resolved)."""
        return self._scorer.n_threads

    @property
    def objective(self) -> str:
        """The objective the model file names (``"lambdarank"``, ``"binary:logistic"``), or ""."""
        return self._info["objective"]

    @property
    def model_format(self) -> str:
        """The format the model was loaded from (``"lightgbm"``, ``"xgboost"``, ...)."""
        return self._info["format"]

    def info(self) -> dict:
        """Everything ``treescore info`` prints: trees, leaves, depth, features, base score..."""
        return dict(self._info)

    def plan_report(self) -> str:
        """Why the engines were chosen: for ``engine="auto"`` the planner's timings of the
        candidates (us/doc) for each range of rows per call, or the wisdom file's earlier
        answers, ending with the table ``plan: rows per call -> engine`` (1, 2-5, 6-7, 8-15,
        16, 17-23, 24-31, 32-63, 64-127, 128+; each ``predict`` call uses the engine of its row count, with
        the same scores whichever); "engine requested" for an explicit engine. ``batch_hint=N``
        plans only N's range and uses that engine for every call. Planned without ``sample``,
        a range whose runner-up timed within 1.5x of its winner shows both ("its first calls
        decide"): the range's first 24 ``predict`` calls take turns on your rows and the
        faster keeps it."""
        return self._scorer.plan_report

    def __repr__(self) -> str:
        return (f"treescore.Model({self.model_format}, {self.num_trees} trees, {self.num_features} features, "
                f"objective={self.objective!r}, engine={self.engine!r})")

    # ---- pickling -----------------------------------------------------------------------

    def __getstate__(self):
        # the planner's sample stays behind: a worker plans with the wisdom file's answer or
        # synthetic rows
        return {"model": self._data, "name": self._name, "model_format": self._format_arg,
                "engine": self._engine_arg, "isa": self._isa_arg, "threads": self._threads,
                "batch_hint": self._batch_hint, "missing": self._missing}

    def __setstate__(self, state):
        self._setup(state["model"], state["name"], state["model_format"], state["engine"], state["isa"],
                    state["threads"], state.get("batch_hint", 0))
        self._missing = state.get("missing")

