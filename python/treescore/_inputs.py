# _inputs.py: what predict accepts, validated and converted: model files, counts, dense arrays, DataFrames, scipy.sparse.
"""The Python input layer of treescore: every input is checked before anything reads it.

Invariants (docs/testing.md, "What the Python layer validates"):

- What reaches ``_core.Scorer.score`` after conversion is a 2-D, C-ordered, native
  float32/float64 array; the C side re-checks every buffer it reads in place (dense_layout).
- A DataFrame's columns are matched to the model's feature names by name when both have
  names (never silently by position): see ``frame_matrix``.
- A sparse matrix's structure (index pointers, indices, shapes, lengths) is checked
  before any index is used, for every scipy format, and only the model's columns are
  ever expanded to dense rows: see ``SparseRows``.
- Every refusal is a ``treescore.Error`` carrying a C status name (``error``), or a
  ``TypeError`` for data that is not numbers.
"""

from __future__ import annotations

import operator
import os
import stat
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import _core

Error = _core.Error

#: The largest count the C API takes (threads, batch_hint are C unsigned ints).
UINT_MAX = (1 << 32) - 1
#: Dense float64 values per chunk when sparse rows are expanded (32 MiB).
SPARSE_CHUNK_VALUES = 1 << 22
#: Bytes asked of the kernel per read of a model file.
_READ_CHUNK = 1 << 24


def error(status: str, message: str) -> Error:
    """A ``treescore.Error`` with its ``status`` (a ts_status name of include/treescore.h:
    ``"TS_ERR_SHAPE"``, ``"TS_ERR_INVALID_ARGUMENT"``, ``"TS_ERR_IO"``, ``"TS_ERR_LIMIT"``...)."""
    e = Error(message)
    e.status = status
    return e


# ---- options and model files -----------------------------------------------------------

def count(value: Any, what: str, negative_means_all: bool) -> int:
    """An integer option in 0..UINT_MAX. With ``negative_means_all`` (threads, n_jobs), a
    negative value means 0 (all cores); otherwise a negative value is refused. Booleans and
    non-integers (2.5, "4") raise TypeError; values past UINT_MAX raise Error (they would
    wrap in the C API's unsigned int)."""
    if isinstance(value, bool):
        raise TypeError(f"{what} must be an integer, not bool")
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an integer, not {type(value).__name__}") from None
    if v < 0 and negative_means_all:
        return 0
    if v < 0 or v > UINT_MAX:
        raise error("TS_ERR_INVALID_ARGUMENT", f"{what}={v} is out of range (0 to {UINT_MAX})")
    return v


# What to use instead of the training libraries' predict arguments (predict refuses them).
_EVERY_TREE = ("treescore scores every tree of the model: keep the trees you want before loading it "
               "(LightGBM: Model(model_str=booster.model_to_string(num_iteration=N)); XGBoost: "
               "Model.from_booster(booster[:N]); from_booster keeps a LightGBM best_iteration and an XGBModel's "
               "best rounds, as their predict does)")
_LIBRARY_ARGS = {
    **dict.fromkeys(("num_iteration", "start_iteration", "iteration_range", "ntree_limit", "ntree_start",
                     "ntree_end", "best_iteration"), _EVERY_TREE),
    **dict.fromkeys(("pred_leaf", "pred_contrib", "pred_interactions", "pred_early_stop", "approx_contribs"),
                    "treescore computes scores only (no leaf indices, contributions or early stopping)"),
    "output_margin": "pass raw_score=True for the margin",
    "prediction_type": "predict gives CatBoost's Probability (classifiers) or its regressor's predict; pass "
                       "raw_score=True for RawFormulaVal",
    **dict.fromkeys(("num_threads", "nthread", "n_threads", "thread_count"),
                    "pass n_jobs= (threads for this call) or Model(threads=)"),
    "missing": "mark missing values NaN (Model.from_booster of an XGBModel keeps its missing value)",
    "validate_features": "DataFrames are matched to the model's feature names by name (predict's docstring)",
}


def predict_options(raw_score: Any, args: tuple, extra: Dict[str, Any]) -> None:
    """TypeError for a raw_score that is not True or False and for positional arguments
    after it (LightGBM's predict(X, start_iteration, num_iteration): predict(X, 0, 10)
    must not read as raw_score=0, n_jobs=10), and for keyword arguments predict does not
    take, naming what to do instead of the training libraries' own (num_iteration,
    pred_leaf, num_threads, ...)."""
    if args:
        given = ", ".join(repr(a) for a in (raw_score,) + tuple(args))
        raise TypeError(f"predict(X, raw_score=False, *, n_jobs=None) takes X and raw_score positionally, not X, "
                        f"{given}: it takes no iteration range (LightGBM's predict(X, start_iteration, "
                        f"num_iteration)); {_EVERY_TREE}")
    if raw_score is not True and raw_score is not False and not isinstance(raw_score, np.bool_):
        raise TypeError(f"predict: raw_score must be True or False, not {raw_score!r} (LightGBM's second argument, "
                        f"start_iteration, has no counterpart: {_EVERY_TREE})")
    for name in extra:
        hint = _LIBRARY_ARGS.get(name)
        raise TypeError(f"predict() got an unexpected keyword argument {name!r}" + (f": {hint}" if hint else ""))


def read_model_file(path: str) -> bytes:
    """The bytes of a model file: a regular file of at most ``_core.max_model_bytes``
    (the C loader's limit, src/io/limits.h). The file is opened without blocking (a FIFO
    with no writer does not hang), its type checked with fstat (FIFOs, devices such as
    /dev/zero, sockets and directories are refused) and never more than the limit plus
    one byte is read, even from a file that grows while it is read."""
    limit = _core.max_model_bytes
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise error("TS_ERR_IO", f"{path}: is a directory, not a regular file: name the model file in it")
        if not stat.S_ISREG(st.st_mode):
            raise error("TS_ERR_IO", f"{path}: not a regular file (a FIFO, device or socket): "
                                     f"read it yourself and pass model_str=")
        if st.st_size > limit:
            raise error("TS_ERR_LIMIT", f"{path}: {st.st_size} bytes, over the model size limit of {limit}")
        chunks: List[bytes] = []
        total = 0
        want = st.st_size + 1  # one more: a file that grew since fstat is seen growing
        while total <= limit:
            chunk = os.read(fd, min(max(want, 1), limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            want = _READ_CHUNK
        if total > limit:
            raise error("TS_ERR_LIMIT", f"{path}: more than the model size limit of {limit} bytes")
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
    finally:
        os.close(fd)


# ---- dense arrays -------------------------------------------------------------------------

def _refuse_text(arr: np.ndarray, what: str) -> None:
    """TypeError when an object array holds text (numpy would parse "1.5" as a number)."""
    for v in arr.ravel():
        if isinstance(v, (str, bytes)):
            raise TypeError(f"{what} must hold numbers, not text such as {v!r}")


def dense_matrix(X: Any, float32: bool = False, arrow_too: bool = False) -> np.ndarray:
    """A 2-D array of numbers as a C-ordered native float32 or float64 array (float32
    and float64 keep their type, other numeric dtypes become float64, or float32 with
    ``float32`` for a numpy array or a list: LightGBM's ``Booster.predict`` converts
    those of any other dtype (integers, bool, float16, long double, object) to float32
    before scoring, so an int64 past 2^24 is scored as its nearest float32 there, and
    here too; XGBoost, CatBoost and scikit-learn's trees compare float32 values, which
    they take from an integer array in one rounding: through float64 an int64 past 2^53
    would be rounded twice, one float32 step off theirs next to a float32 midpoint. Data
    frames of other libraries (polars, pyarrow tables), which LightGBM reads through Arrow
    as doubles, become float64, unless ``arrow_too``: XGBoost rounds an Arrow integer
    column to float32 once). Error (TS_ERR_SHAPE) when it is not 2-D, TypeError when it
    does not hold numbers."""
    float32 = float32 and (arrow_too or isinstance(X, (np.ndarray, list)))
    if not isinstance(X, np.ndarray):
        try:
            X = np.asarray(X)
        except (ValueError, TypeError) as e:
            raise TypeError(f"X must be a 2-D array of numbers: {e}") from None
    if X.ndim != 2:
        raise error("TS_ERR_SHAPE", f"X must be 2-D (rows x columns), got an array of shape {X.shape}")
    kind = X.dtype.kind
    if kind == "f" and X.dtype.itemsize in (4, 8):
        return np.ascontiguousarray(X.astype(X.dtype.newbyteorder("="), copy=False))
    other = np.float32 if float32 else np.float64
    if kind in "fiub":
        return np.ascontiguousarray(X, dtype=other)
    if kind == "O":
        _refuse_text(X, "X")
        try:
            return np.ascontiguousarray(X, dtype=other)
        except (ValueError, TypeError, OverflowError) as e:
            raise TypeError(f"X must hold numbers: {e}") from None
    raise TypeError(f"X must hold numbers, not {X.dtype}")


# ---- pandas DataFrames --------------------------------------------------------------------

def is_dataframe(X: Any) -> bool:
    return type(X).__module__.startswith("pandas") and hasattr(X, "columns") and hasattr(X, "to_numpy")


def arrow_frame(X: Any, names: Optional[List[str]]) -> Any:
    """A pyarrow Table or polars DataFrame as a pandas DataFrame, so that its columns are
    matched to the model's feature names as a pandas frame's are (``frame_columns``);
    None (read it as an array, by position) when the model names no features, for polars'
    default names column_0..column_{n-1}, and for anything else. Error when pandas (or
    pyarrow, which the conversion uses) is missing: a named frame is never taken by
    position silently."""
    mod = type(X).__module__
    if names is None or not (mod.startswith("polars") or mod.startswith("pyarrow")) or not hasattr(X, "to_pandas"):
        return None
    labels = getattr(X, "columns", None) if mod.startswith("polars") else getattr(X, "column_names", None)
    if not isinstance(labels, list) or labels == [f"column_{i}" for i in range(len(labels))]:
        return None
    try:
        return X.to_pandas()
    except ImportError as e:
        raise error("TS_ERR_INVALID_ARGUMENT", f"matching the columns of a {type(X).__name__} to the model's feature "
                                               f"names needs pandas and pyarrow ({e}); pass X.to_numpy() to score "
                                               f"by position") from None


def _is_default_labels(labels: Sequence[Any]) -> bool:
    """True for the labels pandas gives a frame built without names: the integers 0..n-1
    in order (``pd.DataFrame(array)``)."""
    for i, c in enumerate(labels):
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c != i:
            return False
    return True


def _integer_names_reordered(names: List[str], n_labels: int) -> bool:
    """True when the model's feature names are the labels of a frame with integer labels
    0..n_labels-1 in another order ("2", "0", "1": trained on df[[2, 0, 1]]): then a frame
    labelled 0..n-1 names its columns and is matched by name, not taken by position."""
    want = [str(i) for i in range(len(names))]
    if names == want[:len(names)]:
        return False
    labels = {str(i) for i in range(n_labels)}
    return all(n in labels for n in names)


def frame_name(label: Any, lightgbm: bool) -> str:
    """The feature name a training library stores for a DataFrame column label: ``str`` of
    the label (LightGBM and XGBoost both store ``str(label)``: column 3 is "3"), with
    spaces replaced by underscores for LightGBM (its Dataset does so and warns)."""
    name = label if isinstance(label, str) else str(label)
    return name.replace(" ", "_") if lightgbm else name


def frame_columns(labels: Sequence[Any], names: Optional[List[str]], n_features: int,
                  lightgbm: bool) -> Optional[List[int]]:
    """Which column of the frame feeds each model feature, or None to take the columns by
    position. The rule:

    - The model names no features (XGBoost trained on arrays, QuickRank, RankLib): by
      position, as XGBoost does.
    - The frame has pandas' default labels 0..n-1 (``pd.DataFrame(array)``): by position,
      as for a numpy array, unless the model's names are such integers in another order
      (trained on ``df[[2, 0, 1]]``): then by name.
    - Otherwise the frame names its columns (``frame_name`` of each label, strings or not)
      and each model feature is the column of that name: a missing name, a name given to
      two columns, or a model naming a feature twice is an Error (TS_ERR_SHAPE). Columns
      whose names the model does not use are ignored wherever they sit.
    """
    if names is None or (_is_default_labels(labels) and not _integer_names_reordered(names, len(labels))):
        return None
    if len(names) != n_features:
        raise error("TS_ERR_SHAPE", f"the model names {len(names)} of its {n_features} features: a DataFrame "
                                    "cannot be matched to it by name; pass X.to_numpy() to score by position")
    where: Dict[str, List[int]] = {}
    for j, c in enumerate(labels):
        where.setdefault(frame_name(c, lightgbm), []).append(j)
    if len(set(names)) != len(names):
        seen: set = set()
        dup = next(n for n in names if n in seen or seen.add(n))
        raise error("TS_ERR_SHAPE", f"the model names feature {dup!r} twice: a DataFrame cannot be matched to it "
                                    "by name; pass X.to_numpy() to score by position")
    missing = [n for n in names if n not in where]
    if missing:
        shown = ", ".join(repr(n) for n in missing[:10]) + (", ..." if len(missing) > 10 else "")
        hint = "" if len(missing) < len(names) else " (pass X.to_numpy() to score by position)"
        raise error("TS_ERR_SHAPE", f"the DataFrame lacks {len(missing)} of the model's {len(names)} features: "
                                    f"{shown}{hint}")
    cols = []
    for n in names:
        js = where[n]
        if len(js) > 1:
            raise error("TS_ERR_SHAPE", f"the DataFrame has {len(js)} columns named {n!r} (positions "
                                        f"{', '.join(map(str, js[:5]))}): the model's feature is ambiguous")
        cols.append(js[0])
    return cols


def _column_values(col: Any, label: Any, float32_ints: bool = False) -> np.ndarray:
    """One DataFrame column (not categorical) as float64, NA as NaN; TypeError for text.
    ``float32_ints``: an integer column holds its values rounded to float32 in one step,
    as XGBoost, CatBoost and scikit-learn's trees read it (through float64 an int64 past
    2^53 would be rounded twice)."""
    dt = col.dtype
    kind = getattr(dt, "kind", "O")
    if kind not in "fiubO" or str(dt).startswith("string"):
        raise TypeError(f"column {label!r} has dtype {dt}: give treescore numbers")
    if kind == "O":
        _refuse_text(np.asarray(col, dtype=object), f"column {label!r}")
    try:
        if float32_ints and kind in "iu":
            return col.to_numpy(dtype=np.float32, na_value=np.nan).astype(np.float64)
        return col.to_numpy(dtype=np.float64, na_value=np.nan)
    except (ValueError, TypeError, OverflowError) as e:
        raise TypeError(f"column {label!r} must hold numbers: {e}") from None


def _category_text(v: Any, label: Any) -> Any:
    """A CatBoost category's text: a str or bytes as it is, an integer as its decimal text
    (CatBoost hashes 3 and "3" alike); anything else is refused as CatBoost refuses it."""
    if isinstance(v, (str, bytes)):
        return v
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return str(int(v))
    raise TypeError(f"column {label!r}: categorical value {v!r} ({type(v).__name__}): CatBoost's categorical "
                    f"features take integers or strings (convert NaN and real numbers to strings)")


def _category_ids(col: Any, label: Any, column: int, ids: Callable[[int, list], bytes]) -> np.ndarray:
    """A CatBoost categorical column as the model's category ids (float64; NaN: a category
    the model never saw), each distinct value hashed once. (Factorized as a numpy array:
    on pandas' Arrow-backed strings that is about 6x cheaper than factorizing the Series
    and iterating its uniques, which dominated predict on DataFrames of 100 rows.)"""
    import pandas as pd
    if str(col.dtype) == "category":
        codes = col.cat.codes.to_numpy()
        uniques = col.cat.categories.tolist()
    else:
        kind = getattr(col.dtype, "kind", "O")
        if kind in "fcb" or (kind not in "iuOU" and not str(col.dtype).startswith("string")):
            raise TypeError(f"column {label!r} has dtype {col.dtype}: CatBoost's categorical features take integers "
                            f"or strings")
        codes, uniques = pd.factorize(col.to_numpy() if kind in "iu" else col.to_numpy(dtype=object))
        uniques = uniques.astype(str).tolist() if kind in "iu" else uniques.tolist()  # ints: their decimal text
    if len(codes) and codes.min() < 0:
        raise TypeError(f"column {label!r}: a missing categorical value: CatBoost's categorical features take "
                        f"integers or strings (convert NaN to a string)")
    # each distinct value's text (_category_text), with a pass for the common all-str case
    texts = uniques if all(type(v) is str for v in uniques) else [_category_text(v, label) for v in uniques]
    table = np.frombuffer(ids(column, texts), dtype=np.float32).astype(np.float64)
    return table[np.asarray(codes, dtype=np.intp)] if len(table) else np.full(len(col), np.nan)


def categorical_rows(X: Any, hashed: List[int], n_features: int,
                     ids: Callable[[int, list], bytes]) -> Optional[np.ndarray]:
    """For a CatBoost model with hashed categorical columns ``hashed``: a 2-D numpy array
    or list of integers or objects as C-ordered float64 rows whose categorical columns hold
    the model's category ids of their values (``_category_text``: an integer is its
    decimal text, as CatBoost's predict reads it; NaN for a category the model never saw),
    the other columns their numbers. None for anything else (a float array holds ids, as
    the C API's rows do; CatBoost refuses float arrays for such a model), and for an array
    narrower than the model (refused as every input is)."""
    if not isinstance(X, (np.ndarray, list)):
        return None
    try:
        arr = np.array(X, dtype=object) if isinstance(X, list) else X  # a list's own types, not str
    except (ValueError, TypeError):
        return None
    if arr.ndim != 2 or arr.dtype.kind not in "iuO" or arr.shape[1] < n_features:
        return None
    out = np.empty(arr.shape, dtype=np.float64)
    cats = set(hashed)
    for j in range(arr.shape[1]):
        col = arr[:, j]
        if j not in cats:
            if col.dtype.kind == "O":
                _refuse_text(col, f"column {j}")
            try:
                # an integer column rounded to float32 once, as CatBoost reads it (objects,
                # Python ints, go through float64 there too)
                out[:, j] = col.astype(np.float32 if col.dtype.kind in "iu" else np.float64)
            except (ValueError, TypeError, OverflowError) as e:
                raise TypeError(f"column {j} must hold numbers: {e}") from None
            continue
        codes: Dict[Any, int] = {}
        texts: list = []
        index = np.empty(len(col), dtype=np.intp)
        for i, v in enumerate(col.tolist()):
            k = codes.get((type(v), v))
            if k is None:
                k = codes[(type(v), v)] = len(texts)
                texts.append(_category_text(v, j))
            index[i] = k
        table = np.frombuffer(ids(j, texts), dtype=np.float32).astype(np.float64)
        out[:, j] = table[index] if len(table) else np.nan
    return out


_UBJ_NUMBERS = {b"i": "i1", b"U": "u1", b"I": ">i2", b"l": ">i4", b"L": ">i8", b"d": ">f4", b"D": ">f8"}


def _ubj_int(data: bytes, pos: int) -> Tuple[int, int]:
    """A UBJSON length or count (an integer value with its own type marker) at pos."""
    t = data[pos:pos + 1]
    if t not in (b"i", b"U", b"I", b"l", b"L"):
        raise ValueError(f"UBJSON: a length expected at byte {pos}")
    v, pos = _ubj_value(data, pos, 0)
    if v < 0:
        raise ValueError(f"UBJSON: a negative length at byte {pos}")
    return int(v), pos


def _ubj_scalar(data: bytes, t: bytes, pos: int) -> Tuple[Any, int]:
    """The value of type t whose payload starts at pos (t not a container)."""
    if t in _UBJ_NUMBERS:
        dt = np.dtype(_UBJ_NUMBERS[t])
        if pos + dt.itemsize > len(data):
            raise ValueError("UBJSON: truncated")
        return np.frombuffer(data, dt, 1, pos)[0].item(), pos + dt.itemsize
    if t in (b"S", b"H"):
        n, pos = _ubj_int(data, pos)
        if pos + n > len(data):
            raise ValueError("UBJSON: truncated string")
        return data[pos:pos + n].decode("utf-8"), pos + n
    if t == b"C":
        if pos >= len(data):
            raise ValueError("UBJSON: truncated")
        return chr(data[pos]), pos + 1
    if t in (b"Z", b"T", b"F"):
        return {b"Z": None, b"T": True, b"F": False}[t], pos
    raise ValueError(f"UBJSON: unknown type {t!r} at byte {pos - 1}")


def _ubj_container(data: bytes, pos: int, close: bytes, depth: int) -> Tuple[Any, int]:
    """The array (close ]) or object (close }) whose content starts at pos: optionally $
    type and # count (a typed array of numbers becomes a numpy array, without a copy)."""
    typ, count = None, None
    if data[pos:pos + 1] == b"$":
        typ, pos = data[pos + 1:pos + 2], pos + 2
        if data[pos:pos + 1] != b"#":
            raise ValueError(f"UBJSON: a typed container without a count at byte {pos}")
    if data[pos:pos + 1] == b"#":
        count, pos = _ubj_int(data, pos + 1)
    if close == b"]" and typ in _UBJ_NUMBERS:
        dt = np.dtype(_UBJ_NUMBERS[typ])
        if pos + count * dt.itemsize > len(data):
            raise ValueError("UBJSON: truncated array")
        return np.frombuffer(data, dt, count, pos), pos + count * dt.itemsize
    out: Any = [] if close == b"]" else {}
    while True:
        if count is None:
            while data[pos:pos + 1] == b"N":
                pos += 1
            if data[pos:pos + 1] == close:
                return out, pos + 1
            if pos >= len(data):
                raise ValueError("UBJSON: truncated container")
        elif len(out) == count:
            return out, pos
        if close == b"}":
            n, pos = _ubj_int(data, pos)
            key, pos = data[pos:pos + n].decode("utf-8"), pos + n
        if typ is None:
            v, pos = _ubj_value(data, pos, depth + 1)
        elif typ in (b"[", b"{"):
            v, pos = _ubj_container(data, pos, b"]" if typ == b"[" else b"}", depth + 1)
        else:
            v, pos = _ubj_scalar(data, typ, pos)
        if close == b"]":
            out.append(v)
        else:
            out[key] = v


def _ubj_value(data: bytes, pos: int, depth: int) -> Tuple[Any, int]:
    """The UBJSON value at pos (its type marker first) and the position after it."""
    if depth > 64:
        raise ValueError("UBJSON: nested too deep")
    while data[pos:pos + 1] == b"N":  # no-op
        pos += 1
    t = data[pos:pos + 1]
    if t in (b"[", b"{"):
        return _ubj_container(data, pos + 1, b"]" if t == b"[" else b"}", depth)
    if not t:
        raise ValueError("UBJSON: truncated")
    return _ubj_scalar(data, t, pos + 1)


def ubjson_loads(data: bytes) -> Any:
    """A UBJSON document (XGBoost's binary model format) as Python values: objects as dicts,
    typed arrays of numbers as read-only numpy arrays. ValueError where it is malformed."""
    try:
        return _ubj_value(bytes(data), 0, 0)[0]
    except (IndexError, UnicodeDecodeError, OverflowError, RecursionError, TypeError) as e:
        raise ValueError(f"UBJSON: {e}") from None


def xgboost_training_categories(data: bytes, ubjson: bool = False) -> Optional[list]:
    """The categories of each categorical feature (feature_types "c"), in the training
    codes' order, from an XGBoost JSON (or, with ``ubjson``, UBJSON) model's
    ``gradient_booster ... model.cats`` (XGBoost 3.1+: strings as UTF-8 bytes with offsets,
    or numbers), or None without them. XGBoost re-codes a DataFrame's categories to these
    before predicting."""
    import json
    try:
        learner = (ubjson_loads(data) if ubjson else json.loads(data)).get("learner", {})
        gb = learner.get("gradient_booster", {})
        model = gb.get("model") or gb.get("gbtree", {}).get("model", {})
        enc = (model.get("cats") or {}).get("enc")
        types = learner.get("feature_types") or []
        if not isinstance(enc, list) or not enc:
            return None
        out = []
        for i, e in enumerate(enc):
            if i >= len(types) or types[i] != "c":
                continue
            if "offsets" in e:
                off, vals = e["offsets"], bytes(e["values"])
                out.append([vals[int(off[k]):int(off[k + 1])].decode("utf-8") for k in range(len(off) - 1)])
            else:
                out.append([v.item() if isinstance(v, np.generic) else v for v in e.get("values", [])])
        return out or None
    except (ValueError, AttributeError, TypeError, KeyError, IndexError, UnicodeDecodeError):
        return None


def categorical_features(data: bytes, fmt: str) -> Optional[List[int]]:
    """The model features trained as categorical, or None where the model does not say:
    a LightGBM text model's ``feature_infos`` (a categorical feature lists its codes,
    "-1:1:0:3:2"; a numerical one its range "[min:max]", an unused one "none"), an
    XGBoost JSON or UBJSON model's ``feature_types`` ("c")."""
    import json
    try:
        if fmt == "lightgbm":
            i = data.find(b"\nfeature_infos=")
            if i < 0:
                return None
            infos = data[i + 15:].split(b"\n", 1)[0].split()
            return [j for j, t in enumerate(infos) if t != b"none" and not t.startswith(b"[")]
        if fmt in ("xgboost", "xgboost-ubjson"):
            doc = ubjson_loads(data) if fmt == "xgboost-ubjson" else json.loads(data)
            types = doc.get("learner", {}).get("feature_types") or []
            return [j for j, t in enumerate(types) if t == "c"]
    except (ValueError, AttributeError, TypeError, UnicodeDecodeError):
        return None
    return None


def _not_categorical(labels: Sequence[Any], order: List[int], cat: set, model_cats: Optional[List[int]],
                     n_trained: int) -> Error:
    """The refusal of a frame with fewer categorical columns than the model was trained
    with: the columns at the model's categorical features that are not categorical when
    the model says which (``categorical_features``), else the counts."""
    plain = [labels[order[i]] for i in (model_cats or []) if i < len(order) and order[i] not in cat]
    if plain:
        return error("TS_ERR_SHAPE", f"column {plain[0]!r} is not categorical, but the model was trained on it as "
                                     f"a pandas Categorical: pass it as one (with the training categories), or "
                                     f"pass X.to_numpy() whose values are the category codes")
    return error("TS_ERR_SHAPE", f"the DataFrame has {len(cat)} categorical columns but the model was trained with "
                                 f"{n_trained}")


def frame_matrix(df: Any, names: Optional[List[str]], n_features: int, lightgbm: bool,
                 training_categories: Callable[[], Optional[list]],
                 hashed: Optional[Tuple[List[int], Callable[[int, list], bytes]]] = None,
                 refuse_unseen: bool = False, float32_ints: bool = False,
                 model_categorical: Callable[[], Optional[List[int]]] = lambda: None) -> np.ndarray:
    """A DataFrame as C-ordered float64 rows in the model's column order (``frame_columns``);
    integer columns rounded to float32 in one step with ``float32_ints`` (_column_values).
    Categorical columns become their codes (NaN for missing), after setting the training
    categories ``training_categories()`` (LightGBM's ``pandas_categorical``, one list per
    categorical column in order; None when the model has none) as ``Booster.predict`` does.
    ``hashed`` (CatBoost): (the model's hashed categorical columns, a function giving the
    float32 ids of a column's category texts); those columns become category ids from their
    values (object, string, category or integer dtype), as CatBoost hashes them. A frame
    with fewer categorical columns than ``training_categories()`` lists is refused (its
    numbers would be read as codes; LightGBM and XGBoost refuse it), naming the column of
    the first model feature ``model_categorical()`` gives that is not categorical."""
    labels = list(df.columns)
    order = frame_columns(labels, names, n_features, lightgbm)
    if order is None:
        order = list(range(len(labels)))
    n = len(df)
    dtypes = list(df.dtypes)
    hashed_cols = set(hashed[0]) if hashed else set()
    if hashed_cols:
        out = np.empty((n, len(order)), dtype=np.float64)
        unique = df.columns.is_unique  # then a column by its label: half the cost of iloc
        for i, j in enumerate(order):
            col = df[labels[j]] if unique else df.iloc[:, j]
            if i in hashed_cols:
                out[:, i] = _category_ids(col, labels[j], i, hashed[1])
            elif str(dtypes[j]) == "category":
                raise TypeError(f"column {labels[j]!r} is categorical but the model reads it as a number")
            else:
                out[:, i] = _column_values(col, labels[j], float32_ints)
        return out
    cat = {j for j in order if str(dtypes[j]) == "category"}
    # the model's training categories (read once): a frame with fewer categorical columns
    # would have numbers read as category codes (LightGBM and XGBoost refuse it)
    categories = training_categories()
    if categories is not None and len(categories) != len(cat):
        if len(cat) < len(categories):
            raise _not_categorical(labels, order, cat, model_categorical(), len(categories))
        raise error("TS_ERR_SHAPE", f"the DataFrame has {len(cat)} categorical columns but the model was trained "
                                    f"with {len(categories)}")
    if categories and cat:  # as many, but are they the model's? (another column's categories would be set)
        model_cats = model_categorical()
        if model_cats is not None and sorted(i for i, j in enumerate(order) if j in cat) != sorted(model_cats):
            raise _not_categorical(labels, order, cat, model_cats, len(categories))
    if not cat and all(getattr(dt, "kind", "O") in "fiub" for dt in dtypes):
        # every column numeric: one conversion of the frame, then the model's columns
        try:
            full = df.to_numpy(dtype=np.float64, na_value=np.nan)
        except (ValueError, TypeError, OverflowError) as e:
            raise TypeError(f"the DataFrame must hold numbers: {e}") from None
        if float32_ints:
            for j, dt in enumerate(dtypes):
                if getattr(dt, "kind", "O") in "iu":
                    full[:, j] = _column_values(df.iloc[:, j], labels[j], True)
        return np.ascontiguousarray(full if order == list(range(len(labels))) else full[:, order])
    out = np.empty((n, len(order)), dtype=np.float64)
    k = 0
    for i, j in enumerate(order):
        col = df.iloc[:, j]
        if j in cat:
            if categories is not None and list(col.cat.categories) != list(categories[k]):
                before = col.isna().to_numpy()
                col = col.cat.set_categories(categories[k])
                if refuse_unseen and not np.array_equal(col.isna().to_numpy(), before):
                    unseen = df.iloc[:, j][col.isna().to_numpy() & ~before].iloc[0]
                    raise error("TS_ERR_INVALID_ARGUMENT",
                                f"column {labels[j]!r}: category {unseen!r} was not seen in training "
                                f"(XGBoost refuses it too)")
            k += 1
            codes = col.cat.codes.to_numpy()
            out[:, i] = np.where(codes < 0, np.nan, codes.astype(np.float64))
        else:
            out[:, i] = _column_values(col, labels[j], float32_ints)
    return out


# ---- scipy.sparse -------------------------------------------------------------------------

def is_sparse(X: Any) -> bool:
    return type(X).__module__.startswith("scipy.sparse") and hasattr(X, "format") and hasattr(X, "shape")


def _bad(what: str) -> Error:
    return error("TS_ERR_INVALID_ARGUMENT", f"malformed sparse matrix: {what}")


def _index_array(a: Any, what: str) -> np.ndarray:
    """A 1-D array of integers as int64 (uint64 values past int64 refused)."""
    try:
        arr = np.asarray(a)
    except (ValueError, TypeError, OverflowError) as e:
        raise _bad(f"{what} is not an array of integers ({e})") from None
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise _bad(f"{what} must be a 1-D integer array, not {arr.dtype} of shape {arr.shape}")
    if arr.dtype.kind == "u" and arr.dtype.itemsize == 8 and arr.size and arr.max() > np.iinfo(np.int64).max:
        raise _bad(f"{what} holds values past 2^63")
    return arr.astype(np.int64, copy=False)


def _values(a: Any, ndim: int, ints: Optional[np.dtype] = None) -> np.ndarray:
    """The stored values as float64 (TypeError when they are not numbers). With ``ints``
    (the integer dtype of a matrix read as float32: XGBoost, scikit-learn's trees), the
    values are rounded to float32 in one step from that integer type (lil and dok hold
    them as Python objects), as XGBoost and scikit-learn round them."""
    try:
        arr = np.asarray(a)
    except (ValueError, TypeError) as e:
        raise _bad(f"data is not an array ({e})") from None
    if arr.ndim != ndim:
        raise _bad(f"data must be {ndim}-D, not of shape {arr.shape}")
    if arr.dtype.kind == "O":
        _refuse_text(arr, "the sparse matrix")
    elif arr.dtype.kind not in "fiub":
        raise TypeError(f"the sparse matrix must hold numbers, not {arr.dtype}")
    try:
        if ints is not None and arr.dtype.kind in "iuO":
            return arr.astype(ints).astype(np.float32).astype(np.float64)
        return arr.astype(np.float64, copy=False)
    except (ValueError, TypeError, OverflowError) as e:
        raise TypeError(f"the sparse matrix must hold numbers: {e}") from None


def _shape(X: Any) -> Tuple[int, int]:
    shape = tuple(getattr(X, "shape", ()))
    if len(shape) != 2:
        raise error("TS_ERR_SHAPE", f"X must be 2-D (rows x columns), got a sparse array of shape {shape}")
    try:
        n, m = operator.index(shape[0]), operator.index(shape[1])
    except TypeError:
        raise _bad(f"shape {shape} is not two integers") from None
    if n < 0 or m < 0:
        raise _bad(f"negative shape {shape}")
    return n, m


def _in_range(idx: np.ndarray, hi: int, what: str) -> None:
    if idx.size and (idx.min() < 0 or idx.max() >= hi):
        bad = idx[(idx < 0) | (idx >= hi)][0]
        raise _bad(f"{what} index {bad} outside 0..{hi - 1}" if hi else f"{what} index {bad} in an empty dimension")


def _compressed(X: Any, n_major: int, n_minor: int, what: str) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indptr, indices, data) of a CSR/CSC/BSR matrix, checked: indptr has n_major + 1
    entries, starts at 0, never decreases, and its last entry nnz is at most the lengths of
    indices and data (which must agree; entries past nnz are unused, as in scipy); every
    index lies in 0..n_minor-1."""
    indptr = _index_array(X.indptr, "indptr")
    indices = _index_array(X.indices, "indices")
    if indptr.size != n_major + 1:
        raise _bad(f"indptr has {indptr.size} entries for {n_major} {what} (needs {n_major + 1})")
    if indptr[0] != 0:
        raise _bad(f"indptr starts at {indptr[0]}, not 0")
    if n_major and np.any(indptr[1:] < indptr[:-1]):
        raise _bad("indptr decreases")
    nnz = int(indptr[-1])
    data = np.asarray(X.data)
    if len(indices) != len(data) or nnz > len(indices):
        raise _bad(f"indptr ends at {nnz} but indices has {len(indices)} entries and data {len(data)}")
    indices = indices[:nnz]
    return indptr, indices, data[:nnz]


class SparseRows:
    """A scipy.sparse matrix or array (csr, csc, coo, bsr, dia, lil, dok), validated and
    reduced to the entries of the model's first ``width`` columns, grouped by row (CSR
    form: ``indptr``, ``cols``, ``vals``); ``dense(r0, r1)`` expands rows r0..r1-1 to float64
    rows of exactly ``width`` columns, absent entries set to ``absent`` (0.0, or NaN for
    XGBoost) and duplicate entries summed (scipy's meaning). An entry is present when
    scipy's own conversion keeps it (dia drops stored zeros, the other formats keep them).
    Columns past ``width`` are never expanded: memory follows the model, not the matrix.
    With ``keep`` (the ascending columns a packed scorer reads, ``columns_for``), only those
    are expanded, in that order: rows of len(keep) columns."""

    def __init__(self, X: Any, width: int, absent: float, keep: Optional[np.ndarray] = None,
                 float32_ints: bool = False):
        self.n, self.ncols = _shape(X)
        dtype = getattr(X, "dtype", None)
        self._ints = dtype if float32_ints and isinstance(dtype, np.dtype) and dtype.kind in "iu" else None
        self.width = width
        self.absent = absent
        self.keep = keep
        fmt = getattr(X, "format", None)
        if fmt == "csr":
            indptr, cols, vals = _compressed(X, self.n, self.ncols, "rows")
            _in_range(cols, self.ncols, "column")
            vals = _values(vals, 1, self._ints)
            self._set_csr(indptr, cols, vals)
            return
        convert = {"csc": self._from_csc, "coo": self._from_coo, "bsr": self._from_bsr, "dia": self._from_dia,
                   "lil": self._from_lil, "dok": self._from_dok}.get(fmt)
        if convert is None:
            raise TypeError(f"unsupported sparse format {fmt!r}")
        rows, cols, vals = convert(X)
        self._set_triplets(rows, cols, vals)

    # each format's entries as (rows, cols, vals), checked

    def _from_csc(self, X):
        indptr, rows, vals = _compressed(X, self.ncols, self.n, "columns")
        _in_range(rows, self.n, "row")
        vals = _values(vals, 1, self._ints)
        cols = np.repeat(np.arange(self.ncols, dtype=np.int64), np.diff(indptr))
        return rows, cols, vals

    def _from_coo(self, X):
        coords = getattr(X, "coords", None)
        if coords is None:
            coords = (X.row, X.col)
        if len(coords) != 2:
            raise _bad(f"{len(coords)} coordinate arrays for a 2-D matrix")
        rows, cols = _index_array(coords[0], "row"), _index_array(coords[1], "col")
        vals = _values(X.data, 1, self._ints)
        if not len(rows) == len(cols) == len(vals):
            raise _bad(f"row, col and data have {len(rows)}, {len(cols)} and {len(vals)} entries")
        _in_range(rows, self.n, "row")
        _in_range(cols, self.ncols, "column")
        return rows, cols, vals

    def _from_bsr(self, X):
        data = np.asarray(X.data)
        if data.ndim != 3:
            raise _bad(f"bsr data must be 3-D (blocks x R x C), not of shape {data.shape}")
        R, C = data.shape[1], data.shape[2]
        if R <= 0 or C <= 0 or self.n % R or self.ncols % C:
            raise _bad(f"blocksize ({R}, {C}) does not divide shape ({self.n}, {self.ncols})")
        indptr, bcols, blocks = _compressed(X, self.n // R, self.ncols // C, "block rows")
        _in_range(bcols, self.ncols // C, "block column")
        blocks = _values(blocks, 3, self._ints)
        brows = np.repeat(np.arange(self.n // R, dtype=np.int64), np.diff(indptr))
        rows = (brows[:, None, None] * R + np.arange(R)[None, :, None] + np.zeros((1, 1, C), np.int64)).ravel()
        cols = (bcols[:, None, None] * C + np.zeros((1, R, 1), np.int64) + np.arange(C)[None, None, :]).ravel()
        return rows, cols, blocks.ravel()

    def _from_dia(self, X):
        offsets = _index_array(X.offsets, "offsets")
        data = _values(X.data, 2, self._ints)
        if data.shape[0] != offsets.size:
            raise _bad(f"{offsets.size} offsets for {data.shape[0]} diagonals")
        if np.unique(offsets).size != offsets.size:
            raise _bad("offsets repeat")
        L = min(data.shape[1], self.ncols, self.width)  # stored column j is matrix column j
        j = np.arange(L, dtype=np.int64)
        rows = j[None, :] - offsets[:, None]
        vals = data[:, :L]
        keep = (rows >= 0) & (rows < self.n) & (vals != 0)
        return rows[keep], np.broadcast_to(j, rows.shape)[keep], vals[keep]

    def _from_lil(self, X):
        rows_obj, data_obj = np.asarray(X.rows, dtype=object), np.asarray(X.data, dtype=object)
        if rows_obj.shape != (self.n,) or data_obj.shape != (self.n,):
            raise _bad(f"lil rows/data of shapes {rows_obj.shape}/{data_obj.shape} for {self.n} rows")
        lengths = np.array([len(r) for r in rows_obj], dtype=np.int64)
        if not np.array_equal(lengths, [len(d) for d in data_obj]):
            raise _bad("lil rows and data differ in length")
        flat = [c for r in rows_obj for c in r]
        cols = _index_array(_int_list(flat), "lil column")
        vals = _values(np.array([v for d in data_obj for v in d], dtype=object)
                       if lengths.sum() else np.empty(0), 1, self._ints)
        _in_range(cols, self.ncols, "column")
        return np.repeat(np.arange(self.n, dtype=np.int64), lengths), cols, vals

    def _from_dok(self, X):
        items = list(X.items())
        keys = [k for k, _ in items]
        if any(not isinstance(k, tuple) or len(k) != 2 for k in keys):
            raise _bad("a dok key is not a (row, column) pair")
        rows = _index_array(_int_list([k[0] for k in keys]), "dok row")
        cols = _index_array(_int_list([k[1] for k in keys]), "dok column")
        vals = _values(np.array([v for _, v in items], dtype=object) if items else np.empty(0), 1, self._ints)
        _in_range(rows, self.n, "row")
        _in_range(cols, self.ncols, "column")
        return rows, cols, vals

    # grouping by row, keeping the model's columns

    def _packed(self, cols: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Which entries fall in the model's columns (a boolean mask), and their column in
        the rows expanded: the column itself, or its position among ``keep``."""
        if self.keep is None:
            return cols < self.width, cols
        pos = np.searchsorted(self.keep, cols)
        ok = pos < len(self.keep)
        ok[ok] = self.keep[pos[ok]] == cols[ok]
        return ok, pos

    def _set_triplets(self, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray) -> None:
        keep, cols = self._packed(cols)
        if not keep.all():
            rows, cols, vals = rows[keep], cols[keep], vals[keep]
        order = np.argsort(rows, kind="stable")
        counts = np.bincount(rows, minlength=self.n) if rows.size else np.zeros(self.n, np.int64)
        self.indptr = np.concatenate(([0], np.cumsum(counts)))
        self.cols, self.vals = cols[order], vals[order]

    def _set_csr(self, indptr: np.ndarray, cols: np.ndarray, vals: np.ndarray) -> None:
        keep, cols = self._packed(cols)
        if not keep.all():
            indptr = np.concatenate(([0], np.cumsum(keep)))[indptr]
            cols, vals = cols[keep], vals[keep]
        self.indptr, self.cols, self.vals = indptr, cols, vals

    def dense(self, r0: int, r1: int) -> np.ndarray:
        """Rows r0..r1-1 as a C-ordered (r1 - r0, width) float64 array (len(keep) columns
        with ``keep``)."""
        w = self.width if self.keep is None else len(self.keep)
        s, e = int(self.indptr[r0]), int(self.indptr[r1])
        out = np.full((r1 - r0) * w, self.absent, dtype=np.float64)
        if e > s:
            rows = np.repeat(np.arange(r1 - r0, dtype=np.int64), np.diff(self.indptr[r0:r1 + 1]))
            pos = rows * w + self.cols[s:e]
            vals = self.vals[s:e]
            if pos.size > 1 and not np.all(pos[1:] > pos[:-1]) and np.unique(pos).size != pos.size:
                out[pos] = 0.0  # duplicates add up, from 0 even where absent means NaN
                np.add.at(out, pos, vals)
            else:
                out[pos] = vals
        return out.reshape(r1 - r0, w)

    def chunks(self):
        """(r0, r1) row ranges of about SPARSE_CHUNK_VALUES dense values each."""
        step = max(1, SPARSE_CHUNK_VALUES // max(1, self.width if self.keep is None else len(self.keep)))
        return [(r0, min(self.n, r0 + step)) for r0 in range(0, self.n, step)]


def _int_list(values: list) -> np.ndarray:
    """Python integers (or numpy integers) as an int64 array; anything else refused."""
    if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in values):
        raise _bad("an index is not an integer")
    try:
        return np.array(values, dtype=np.int64)
    except OverflowError:
        raise _bad("an index does not fit in 64 bits") from None
