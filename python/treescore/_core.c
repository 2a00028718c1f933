/* _core.c: the CPython extension treescore._core: models and scorers of libtreescore, scoring buffers with the GIL released. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <treescore.h>

#include "io/limits.h" /* TSIO_MAX_MODEL_BYTES, exported as max_model_bytes */

/*
 * What lives here
 * ---------------
 *   _core.Model   owns one ts_model (immutable once loaded; read from any thread).
 *   _core.Scorer  owns one ts_scorer (immutable; ts_scorer_score is thread-safe and takes
 *                 no lock, so score() releases the GIL and many Python threads may call
 *                 it at once).
 *   _core.Error   the exception of every library failure (a ValueError); its `status`
 *                 attribute is the ts_status name ("TS_ERR_PARSE", ...).
 * The pure-Python layer (treescore/__init__.py) converts inputs and keeps the options;
 * this file only sees 2-D buffers of float32 or float64 whose columns are adjacent.
 *
 * Output transforms (the objective's link, applied after the raw scores, in C so that
 * the bits are those of the training library's own C/C++ code and the same libm):
 * see enum transform.
 */

/* Output transforms. LGB_* compute in double as LightGBM does; XGB_* compute in float32
 * from the margin rounded to float32, as XGBoost does. Codes are shared with
 * treescore/_objectives.py. */
enum transform {
    TR_NONE = 0,
    TR_LGB_SIGMOID = 1,  /* 1 / (1 + exp(-param * x)): binary, multiclassova, cross_entropy */
    TR_LGB_EXP = 2,      /* exp(x): poisson, gamma, tweedie */
    TR_LGB_SOFTMAX = 3,  /* softmax over the K scores of a row: multiclass */
    TR_LGB_SQUARE = 4,   /* sign(x) * x * x: regression with sqrt */
    TR_LGB_LOG1PEXP = 5, /* log(1 + exp(x)): cross_entropy_lambda */
    TR_XGB_SIGMOID = 6,  /* float: 1 / (expf(min(-x, 88.7f)) + 1): binary:logistic, reg:logistic */
    TR_XGB_EXP = 7,      /* float: expf(x): count:poisson, reg:gamma, reg:tweedie, survival:cox, survival:aft */
    TR_XGB_SOFTMAX = 8,  /* float softmax: multi:softprob */
    TR_XGB_ARGMAX = 9,   /* index of the largest margin: multi:softmax */
    TR_XGB_HINGE = 10,   /* x > 0 ? 1 : 0: binary:hinge */
    TR_COUNT = 11
};

static PyObject *core_error; /* _core.Error */
static PyObject *np_empty;   /* numpy.empty, set by _set_numpy */

typedef struct {
    PyObject_HEAD
    ts_model *model;
} CoreModel;

typedef struct {
    PyObject_HEAD
    ts_scorer *scorer;
    uint32_t n_outputs;
    uint64_t nodes;      /* the model's internal nodes: the work of a row, about */
} CoreScorer;

/* A call of at most this many rows x nodes keeps the GIL: releasing and taking it back
 * costs about as much as scoring it (one row of a small model, ~0.1 us); other Python
 * threads wait a few microseconds at most. */
#define GIL_KEEP_WORK 4096u

/* A call of more than this many rows x nodes is scored in slices of about this much
 * work (at least SLICE_MIN_ROWS rows, the last slice up to twice that), taking the GIL
 * between them to run Python's signal handlers: Ctrl-C (KeyboardInterrupt) stops a
 * predict of minutes within about a second instead of at its end. Every engine gives the
 * same bits for any split of the rows. */
#define SLICE_WORK ((uint64_t)1 << 29)
#define SLICE_MIN_ROWS 4096u

static PyTypeObject CoreModelType;
static PyTypeObject CoreScorerType;

/* Raises _core.Error(message) with .status set; returns NULL. */
static PyObject *raise_ts(ts_status st, const ts_error *err) {
    const char *msg = err && err->message[0] ? err->message : ts_status_name(st);
    PyObject *args = Py_BuildValue("(s)", msg);
    if (!args) return NULL;
    PyObject *exc = PyObject_Call(core_error, args, NULL);
    Py_DECREF(args);
    if (!exc) return NULL;
    PyObject *name = PyUnicode_FromString(ts_status_name(st));
    if (name) {
        PyObject_SetAttrString(exc, "status", name);
        Py_DECREF(name);
    }
    PyErr_SetObject(core_error, exc);
    Py_DECREF(exc);
    return NULL;
}

/* ---- transforms ------------------------------------------------------------------ */

static void softmax_f64(double *r, uint32_t k) {
    double wmax = r[0];
    for (uint32_t i = 1; i < k; i++) wmax = r[i] > wmax ? r[i] : wmax;
    double wsum = 0.0;
    for (uint32_t i = 0; i < k; i++) {
        r[i] = exp(r[i] - wmax);
        wsum += r[i];
    }
    for (uint32_t i = 0; i < k; i++) r[i] /= wsum;
}

static void softmax_f32(double *r, uint32_t k) {
    float wmax = (float)r[0];
    for (uint32_t i = 1; i < k; i++) wmax = fmaxf((float)r[i], wmax);
    double wsum = 0.0; /* XGBoost sums the float exponentials in double */
    for (uint32_t i = 0; i < k; i++) {
        r[i] = (double)expf((float)r[i] - wmax); /* exactly the float */
        wsum += r[i];
    }
    for (uint32_t i = 0; i < k; i++) r[i] = (double)((float)r[i] / (float)wsum);
}

static double argmax(const double *r, uint32_t k) {
    uint32_t best = 0;
    for (uint32_t i = 1; i < k; i++)
        if ((float)r[i] > (float)r[best]) best = i;
    return (double)best;
}

/* XGBoost's float sigmoid (common::Sigmoid, XGBoost 2.x/3.x): the exponent clamped at
 * 88.7f, so margins below -88.7 give 1 / expf(88.7f), not 0; a NaN stays NaN. */
static double xgb_sigmoid(float x) {
    const float eps = 1e-16f; /* its kEps: no effect on a denominator of at least 1 */
    float z = 88.7f < -x ? 88.7f : -x; /* std::min(-x, 88.7f) */
    return (double)(1.0f / (expf(z) + 1.0f + eps));
}

static double transform_one(int tr, double x, double param) {
    switch (tr) {
    case TR_LGB_SIGMOID: return 1.0 / (1.0 + exp(-param * x));
    case TR_LGB_EXP: return exp(x);
    case TR_LGB_SQUARE: return (x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0) * x * x;
    case TR_LGB_LOG1PEXP: return log1p(exp(x));
    case TR_XGB_SIGMOID: return xgb_sigmoid((float)x);
    case TR_XGB_EXP: return (double)expf((float)x);
    case TR_XGB_HINGE: return (float)x > 0.0f ? 1.0 : 0.0;
    default: return x;
    }
}

/* In place on n rows of k scores: first divide by `divisor` when it is not 0 (LightGBM's
 * average_output: the mean over iterations), then the transform. ARGMAX writes one value
 * per row, packed at the front (the caller shapes the output (n,)). */
static void apply_transform(double *out, size_t n, uint32_t k, int tr, double param, double divisor) {
    size_t total = n * k;
    if (divisor != 0.0)
        for (size_t i = 0; i < total; i++) out[i] /= divisor;
    if (tr == TR_NONE) return;
    if (tr == TR_LGB_SOFTMAX || tr == TR_XGB_SOFTMAX) {
        for (size_t r = 0; r < n; r++) (tr == TR_LGB_SOFTMAX ? softmax_f64 : softmax_f32)(out + r * k, k);
        return;
    }
    if (tr == TR_XGB_ARGMAX) {
        for (size_t r = 0; r < n; r++) out[r] = argmax(out + r * k, k);
        return;
    }
    for (size_t i = 0; i < total; i++) out[i] = transform_one(tr, out[i], param);
}

/* ---- _core.Model ----------------------------------------------------------------- */

/* The item size of a buffer format that is one native float32 ('f') or float64 ('d'):
 * 4 or 8; 0 for anything else. A byte-order prefix counts only when it names this
 * machine's order ('@', '=', and '<' or '>' as the host is little or big endian). */
static int float_kind(const char *format) {
    if (!format) return 0; /* NULL means "B" (unsigned bytes): not a float */
    const uint16_t one = 1;
    char host = *(const char *)&one ? '<' : '>';
    if (format[0] == '@' || format[0] == '=' || format[0] == host) format++;
    if (format[0] == 'f' && format[1] == '\0') return 4;
    if (format[0] == 'd' && format[1] == '\0') return 8;
    return 0;
}

static void model_dealloc(CoreModel *self) {
    ts_model_free(self->model);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* load(data, format, name) -> Model. `data`: any bytes-like object; `format`: a name
 * for ts_model_format_from_name ("auto", "lightgbm", ...). */
static PyObject *core_load(PyObject *mod, PyObject *args) {
    (void)mod;
    Py_buffer buf;
    const char *format_name, *name;
    if (!PyArg_ParseTuple(args, "y*ss:load", &buf, &format_name, &name)) return NULL;
    ts_error err;
    ts_model_format fmt;
    ts_status st = ts_model_format_from_name(format_name, &fmt);
    if (st != TS_OK) {
        PyBuffer_Release(&buf);
        snprintf(err.message, sizeof err.message, "unknown model_format '%s'", format_name);
        return raise_ts(st, &err);
    }
    ts_model *model = NULL;
    memset(&err, 0, sizeof err);
    Py_BEGIN_ALLOW_THREADS
    st = ts_model_load_buffer(buf.buf, (size_t)buf.len, fmt, name, &model, &err);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&buf);
    if (st != TS_OK) return raise_ts(st, &err);
    CoreModel *self = PyObject_New(CoreModel, &CoreModelType);
    if (!self) {
        ts_model_free(model);
        return NULL;
    }
    self->model = model;
    return (PyObject *)self;
}

static PyObject *model_info(CoreModel *self, PyObject *unused) {
    (void)unused;
    ts_model_info in;
    ts_error err;
    ts_status st = ts_model_get_info(self->model, &in, &err);
    if (st != TS_OK) return raise_ts(st, &err);
    PyObject *objective = PyUnicode_DecodeUTF8(in.objective, (Py_ssize_t)strlen(in.objective), "strict");
    if (!objective) {
        PyErr_Clear();
        snprintf(err.message, sizeof err.message, "the model's objective is not UTF-8 text");
        return raise_ts(TS_ERR_PARSE, &err);
    }
    return Py_BuildValue("{s:s,s:I,s:I,s:I,s:I,s:K,s:K,s:I,s:d,s:I,s:d,s:d,s:I,s:I,s:N,s:I,s:I}", "format",
                         ts_model_format_name(in.format), "n_trees", in.n_trees, "n_features", in.n_features,
                         "n_features_declared", in.n_features_declared, "n_features_used", in.n_features_used,
                         "n_internal_nodes", (unsigned long long)in.n_internal_nodes, "n_leaves",
                         (unsigned long long)in.n_leaves, "leaves_max", in.leaves_max, "leaves_mean",
                         in.leaves_mean, "depth_max", in.depth_max, "depth_mean", in.depth_mean, "base_score",
                         in.base_score, "average_output", in.average_output, "has_missing_splits",
                         in.has_missing_splits, "objective", objective, "n_outputs", in.n_outputs,
                         "n_categorical_splits", in.n_categorical_splits);
}

/* The model's feature names, or None when it names none. */
static PyObject *model_feature_names(CoreModel *self, PyObject *unused) {
    (void)unused;
    ts_model_info in;
    ts_error err;
    ts_status st = ts_model_get_info(self->model, &in, &err);
    if (st != TS_OK) return raise_ts(st, &err);
    if (in.n_features == 0 || !ts_model_feature_name(self->model, 0)) Py_RETURN_NONE;
    PyObject *list = PyList_New(0);
    if (!list) return NULL;
    for (uint32_t i = 0; i < in.n_features; i++) {
        const char *name = ts_model_feature_name(self->model, i);
        if (!name) break;
        PyObject *s = PyUnicode_DecodeUTF8(name, (Py_ssize_t)strlen(name), "replace");
        if (!s || PyList_Append(list, s) != 0) {
            Py_XDECREF(s);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(s);
    }
    return list;
}

/* The hashed categorical columns (CatBoost) of the model, ascending. */
static PyObject *model_categorical_columns(CoreModel *self, PyObject *unused) {
    (void)unused;
    ts_model_info in;
    ts_error err;
    ts_status st = ts_model_get_info(self->model, &in, &err);
    if (st != TS_OK) return raise_ts(st, &err);
    PyObject *list = PyList_New(0);
    if (!list) return NULL;
    for (uint32_t i = 0; i < in.n_features; i++) {
        if (!ts_model_is_categorical(self->model, i)) continue;
        PyObject *v = PyLong_FromUnsignedLong(i);
        if (!v || PyList_Append(list, v) != 0) {
            Py_XDECREF(v);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(v);
    }
    return list;
}

/* category_ids(column, texts) -> bytes of len(texts) float32 ids (ts_model_category_id;
 * NaN for a category the model never saw). texts: a sequence of str (hashed as UTF-8) or
 * bytes. */
static PyObject *model_category_ids(CoreModel *self, PyObject *args) {
    unsigned int column;
    PyObject *seq;
    if (!PyArg_ParseTuple(args, "IO", &column, &seq)) return NULL;
    PyObject *fast = PySequence_Fast(seq, "category_ids: texts must be a sequence");
    if (!fast) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(float));
    if (!out) {
        Py_DECREF(fast);
        return NULL;
    }
    float *ids = (float *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PySequence_Fast_GET_ITEM(fast, i);
        const char *text;
        Py_ssize_t len;
        if (PyUnicode_Check(o)) {
            text = PyUnicode_AsUTF8AndSize(o, &len);
            if (!text) goto fail;
        } else if (PyBytes_Check(o)) {
            text = PyBytes_AS_STRING(o);
            len = PyBytes_GET_SIZE(o);
        } else {
            PyErr_Format(PyExc_TypeError, "category_ids: item %zd is %.80s, not str or bytes", i, Py_TYPE(o)->tp_name);
            goto fail;
        }
        ts_error err;
        ts_status st = ts_model_category_id(self->model, column, text, (size_t)len, &ids[i], &err);
        if (st != TS_OK) {
            raise_ts(st, &err);
            goto fail;
        }
    }
    Py_DECREF(fast);
    return out;
fail:
    Py_DECREF(fast);
    Py_DECREF(out);
    return NULL;
}

static PyObject *model_absent_value(CoreModel *self, PyObject *unused) {
    (void)unused;
    return PyFloat_FromDouble((double)ts_model_absent_value(self->model));
}

/* The sample (ts_scorer_options.sample): a C-contiguous 2-D float32 buffer with at least `n_features`
 * columns, or None. Fills opts; 0 on success, -1 with an exception set. */
static int set_sample(PyObject *sample, Py_buffer *buf, ts_scorer_options *opts, uint32_t n_features) {
    if (sample == Py_None) return 0;
    if (PyObject_GetBuffer(sample, buf, PyBUF_RECORDS_RO | PyBUF_C_CONTIGUOUS) != 0) return -1;
    if (buf->ndim != 2 || float_kind(buf->format) != 4) {
        PyBuffer_Release(buf);
        PyErr_SetString(PyExc_ValueError, "sample: a C-ordered 2-D float32 array expected");
        return -1;
    }
    if (buf->shape[1] < (Py_ssize_t)n_features) {
        ts_error err;
        snprintf(err.message, sizeof err.message, "sample: the rows have %zd columns but the model reads %u",
                 buf->shape[1], n_features);
        PyBuffer_Release(buf);
        raise_ts(TS_ERR_SHAPE, &err);
        return -1;
    }
    opts->sample = buf->shape[0] > 0 ? (const float *)buf->buf : NULL;
    opts->sample_rows = (size_t)buf->shape[0];
    opts->sample_stride = (size_t)buf->shape[1];
    return 0;
}

/* columns_for() -> list of int, or None: ts_scorer_columns_for, the columns a scorer of
 * the model reads when it declares many more than it reads (None: rows of full width). */
static PyObject *model_columns_for(CoreModel *self, PyObject *unused) {
    (void)unused;
    uint32_t *cols = NULL, n = 0;
    ts_error err;
    ts_status st = ts_scorer_columns_for(self->model, &cols, &n, &err);
    if (st != TS_OK) return raise_ts(st, &err);
    if (!cols) Py_RETURN_NONE;
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (uint32_t i = 0; list && i < n; i++) {
        PyObject *v = PyLong_FromUnsignedLong(cols[i]);
        if (!v) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, v);
    }
    free(cols);
    return list;
}

/* scorer(engine, isa, threads, batch_hint, sample=None, packed=False) -> Scorer. `isa`: a
 * name or "auto"; `sample`: rows for the planner to time the engines on, and for rapid to
 * order its leaves by (see set_sample); `packed`: rows hold only the columns of
 * columns_for(), in that order (the sample too). */
static PyObject *model_scorer(CoreModel *self, PyObject *args) {
    const char *engine_name, *isa_name;
    Py_ssize_t threads, batch_hint;
    PyObject *sample = Py_None;
    int packed = 0;
    if (!PyArg_ParseTuple(args, "ssnn|Op:scorer", &engine_name, &isa_name, &threads, &batch_hint, &sample, &packed))
        return NULL;
    ts_error err;
    memset(&err, 0, sizeof err);
    if (threads < 0 || (size_t)threads > UINT_MAX || batch_hint < 0 || (size_t)batch_hint > UINT32_MAX) {
        snprintf(err.message, sizeof err.message, "threads %zd or batch_hint %zd is outside 0 to %u", threads,
                 batch_hint, UINT_MAX);
        return raise_ts(TS_ERR_INVALID_ARGUMENT, &err);
    }
    ts_scorer_options opts;
    ts_scorer_options_init(&opts);
    ts_status st = ts_engine_from_name(engine_name, &opts.engine);
    if (st != TS_OK) {
        /* every engine by ts_engine_name (a fixed list here had fallen behind) */
        char names[256];
        size_t len = 0;
        names[0] = '\0';
        for (int e = 0; e < TS_ENGINE_COUNT && len < sizeof names; e++) {
            int k = snprintf(names + len, sizeof names - len, "%s%s", e ? ", " : "", ts_engine_name((ts_engine)e));
            if (k < 0) break;
            len += (size_t)k;
        }
        snprintf(err.message, sizeof err.message, "unknown engine '%s' (%s)", engine_name, names);
        return raise_ts(st, &err);
    }
    st = ts_isa_from_name(isa_name, &opts.max_isa);
    if (st != TS_OK) {
        snprintf(err.message, sizeof err.message, "unknown isa '%s' (auto, scalar, sse4.2, avx2, avx512)", isa_name);
        return raise_ts(st, &err);
    }
    opts.n_threads = (unsigned)threads;
    opts.batch_hint = (uint32_t)batch_hint;
    opts.packed_columns = packed != 0;
    ts_model_info in;
    Py_buffer sbuf;
    st = ts_model_get_info(self->model, &in, &err);
    if (st != TS_OK) return raise_ts(st, &err);
    uint32_t width = in.n_features, *cols = NULL, n_cols = 0;
    if (packed && ts_scorer_columns_for(self->model, &cols, &n_cols, &err) == TS_OK && cols) width = n_cols;
    free(cols);
    if (set_sample(sample, &sbuf, &opts, width) != 0) return NULL;
    ts_scorer *scorer = NULL;
    Py_BEGIN_ALLOW_THREADS
    st = ts_scorer_create(self->model, &opts, &scorer, &err);
    Py_END_ALLOW_THREADS
    if (sample != Py_None) PyBuffer_Release(&sbuf);
    if (st != TS_OK) return raise_ts(st, &err);
    CoreScorer *s = PyObject_New(CoreScorer, &CoreScorerType);
    if (!s) {
        ts_scorer_free(scorer);
        return NULL;
    }
    s->scorer = scorer;
    s->n_outputs = ts_scorer_n_outputs(scorer);
    if (s->n_outputs == 0) s->n_outputs = 1;
    s->nodes = in.n_internal_nodes;
    return (PyObject *)s;
}

static PyMethodDef model_methods[] = {
    {"info", (PyCFunction)model_info, METH_NOARGS, "info() -> dict: ts_model_get_info's fields."},
    {"feature_names", (PyCFunction)model_feature_names, METH_NOARGS,
     "feature_names() -> list of str, or None when the model names no features."},
    {"categorical_columns", (PyCFunction)model_categorical_columns, METH_NOARGS,
     "categorical_columns() -> list of int: the hashed categorical columns (CatBoost)."},
    {"category_ids", (PyCFunction)model_category_ids, METH_VARARGS,
     "category_ids(column, texts) -> bytes: float32 ids of the categories (NaN: unseen)."},
    {"absent_value", (PyCFunction)model_absent_value, METH_NOARGS,
     "absent_value() -> float: what an absent sparse entry means (0.0, or NaN for XGBoost)."},
    {"scorer", (PyCFunction)model_scorer, METH_VARARGS,
     "scorer(engine, isa, threads, batch_hint, sample=None, packed=False) -> Scorer: ts_scorer_create (GIL "
     "released)."},
    {"columns_for", (PyCFunction)model_columns_for, METH_NOARGS,
     "columns_for() -> list of int or None: the columns a packed scorer reads (ts_scorer_columns_for)."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject CoreModelType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "treescore._core.Model",
    .tp_basicsize = sizeof(CoreModel),
    .tp_dealloc = (destructor)model_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A loaded libtreescore model (made by _core.load).",
    .tp_methods = model_methods,
};

/* ---- _core.Scorer ---------------------------------------------------------------- */

static void scorer_dealloc(CoreScorer *self) {
    ts_scorer_free(self->scorer);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* A new float64 numpy array of shape (n,) or (n, k). */
static PyObject *new_output(Py_ssize_t n, uint32_t k) {
    if (!np_empty) {
        PyErr_SetString(PyExc_RuntimeError, "treescore._core: numpy not set");
        return NULL;
    }
    PyObject *shape = k == 1 ? Py_BuildValue("(n)", n) : Py_BuildValue("(nI)", n, k);
    if (!shape) return NULL;
    PyObject *out = PyObject_CallOneArg(np_empty, shape);
    Py_DECREF(shape);
    return out;
}

/* 1 when score() can read buffer x in place, with *stride its row stride in items: 2-D,
 * one native float32/float64 per item, len equal to rows x cols x itemsize, no
 * suboffsets (arrays of pointers), each row's columns adjacent and rows a positive
 * whole number of items apart, at least a row's width. strides NULL means C order
 * (PEP 3118: ctypes arrays export no strides). An empty matrix (0 rows or 0 columns)
 * has any strides (numpy gives (0, 0)) and its stride is its width. */
static int dense_layout(const Py_buffer *x, size_t *stride) {
    int size = float_kind(x->format);
    if (x->ndim != 2 || !x->shape || size == 0 || x->itemsize != size || x->suboffsets) return 0;
    Py_ssize_t rows = x->shape[0], cols = x->shape[1];
    if (rows < 0 || cols < 0) return 0;
    if (cols > 0 && rows > PY_SSIZE_T_MAX / size / cols) return 0;
    if (x->len != rows * cols * size) return 0;
    *stride = (size_t)cols;
    if (rows == 0 || cols == 0) return 1;
    if (!x->buf) return 0;
    if (!x->strides) return 1;
    if (cols > 1 && x->strides[1] != size) return 0;
    if (rows == 1) return 1;
    Py_ssize_t s0 = x->strides[0];
    if (s0 <= 0 || s0 % size != 0 || s0 / size < cols) return 0;
    *stride = (size_t)(s0 / size);
    return 1;
}

/* Scores the rows of buffer x into dst, in slices of about SLICE_WORK when *ts_save
 * says the GIL was released: between slices the GIL is taken back to run Python's
 * signal handlers (PyErr_CheckSignals), and *interrupted is set, with the handler's
 * exception, when one raised; the rows after that slice are not scored. */
static ts_status score_slices(CoreScorer *self, const Py_buffer *x, size_t rows, size_t cols, size_t stride,
                              double *dst, PyThreadState **ts_save, int *interrupted, ts_error *err) {
    size_t step = rows, k = self->n_outputs;
    if (*ts_save && (uint64_t)rows * (self->nodes + 1) > SLICE_WORK) {
        uint64_t per = SLICE_WORK / (self->nodes + 1);
        step = per < SLICE_MIN_ROWS ? SLICE_MIN_ROWS : (size_t)per;
    }
    ts_status st = TS_OK;
    for (size_t r0 = 0; r0 < rows && st == TS_OK;) {
        size_t n = rows - r0 < 2 * step ? rows - r0 : step; /* no short last slice */
        if (x->itemsize == 4)
            st = ts_scorer_score(self->scorer, (const float *)x->buf + r0 * stride, n, cols, stride, dst + r0 * k, err);
        else
            st = ts_scorer_score_f64(self->scorer, (const double *)x->buf + r0 * stride, n, cols, stride,
                                     dst + r0 * k, err);
        r0 += n;
        if (st == TS_OK && r0 < rows) {
            PyEval_RestoreThread(*ts_save);
            int raised = PyErr_CheckSignals();
            *ts_save = PyEval_SaveThread();
            if (raised) {
                *interrupted = 1;
                return TS_OK;
            }
        }
    }
    return st;
}

/* score(X, transform=0, param=1.0, divisor=0.0) -> ndarray, or NotImplemented when X is
 * not a buffer dense_layout accepts (the caller converts it and calls again). No copy
 * of X is made; the GIL is released while scoring. A row narrower than the model is
 * refused (TS_ERR_SHAPE) before the output is allocated. */
static PyObject *scorer_score(CoreScorer *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 1 || nargs > 4) {
        PyErr_SetString(PyExc_TypeError, "score(X, transform=0, param=1.0, divisor=0.0)");
        return NULL;
    }
    long tr = 0;
    double param = 1.0, divisor = 0.0;
    if (nargs > 1 && (tr = PyLong_AsLong(args[1]), PyErr_Occurred())) return NULL;
    if (nargs > 2 && (param = PyFloat_AsDouble(args[2]), PyErr_Occurred())) return NULL;
    if (nargs > 3 && (divisor = PyFloat_AsDouble(args[3]), PyErr_Occurred())) return NULL;
    if (tr < 0 || tr >= TR_COUNT) {
        PyErr_SetString(PyExc_ValueError, "unknown transform");
        return NULL;
    }
    Py_buffer x;
    if (PyObject_GetBuffer(args[0], &x, PyBUF_RECORDS_RO) != 0) {
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    size_t stride = 0;
    if (!dense_layout(&x, &stride)) {
        PyBuffer_Release(&x);
        Py_RETURN_NOTIMPLEMENTED;
    }
    Py_ssize_t rows = x.shape[0], cols = x.shape[1];
    uint32_t need = ts_scorer_n_features(self->scorer);
    if ((size_t)cols < need) {
        ts_error err;
        snprintf(err.message, sizeof err.message, "the data has %zd columns but the model reads %u", cols, need);
        PyBuffer_Release(&x);
        return raise_ts(TS_ERR_SHAPE, &err);
    }
    uint32_t k = self->n_outputs;
    uint32_t k_out = tr == TR_XGB_ARGMAX ? 1 : k;
    PyObject *out = new_output(rows, k_out);
    if (!out) {
        PyBuffer_Release(&x);
        return NULL;
    }
    Py_buffer o;
    if (PyObject_GetBuffer(out, &o, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) != 0) {
        PyBuffer_Release(&x);
        Py_DECREF(out);
        return NULL;
    }
    /* ARGMAX needs room for the K scores of every row before it packs them. */
    double *dst = (double *)o.buf, *tmp = NULL;
    if (k_out != k && rows > 0) {
        tmp = (size_t)rows > SIZE_MAX / sizeof(double) / k ? NULL : PyMem_RawMalloc((size_t)rows * k * sizeof(double));
        if (!tmp) {
            PyBuffer_Release(&o);
            PyBuffer_Release(&x);
            Py_DECREF(out);
            return PyErr_NoMemory();
        }
        dst = tmp;
    }
    ts_error err;
    err.message[0] = '\0';
    ts_status st = TS_OK;
    /* Py_BEGIN_ALLOW_THREADS, unless the call is tiny (GIL_KEEP_WORK) */
    PyThreadState *ts_save = (uint64_t)rows * (self->nodes + 1) > GIL_KEEP_WORK ? PyEval_SaveThread() : NULL;
    int interrupted = 0;
    if (rows > 0) /* else nothing to read (an empty buffer may have no address) */
        st = score_slices(self, &x, (size_t)rows, (size_t)cols, stride, dst, &ts_save, &interrupted, &err);
    if (interrupted) st = TS_OK; /* the rows left are not scored: nothing to transform */
    else if (st == TS_OK) apply_transform(dst, (size_t)rows, k, tr, param, divisor);
    if (st == TS_OK && tmp && !interrupted) memcpy(o.buf, tmp, (size_t)rows * sizeof(double));
    if (ts_save) PyEval_RestoreThread(ts_save);
    PyMem_RawFree(tmp);
    PyBuffer_Release(&o);
    PyBuffer_Release(&x);
    if (interrupted) { /* a signal handler raised (KeyboardInterrupt): its exception is set */
        Py_DECREF(out);
        return NULL;
    }
    if (st != TS_OK) {
        Py_DECREF(out);
        return raise_ts(st, &err);
    }
    return out;
}

static PyObject *scorer_get_engine(CoreScorer *self, void *closure) {
    (void)closure;
    return PyUnicode_FromString(ts_engine_name(ts_scorer_engine(self->scorer)));
}
static PyObject *scorer_get_isa(CoreScorer *self, void *closure) {
    (void)closure;
    return PyUnicode_FromString(ts_isa_name(ts_scorer_isa(self->scorer)));
}
static PyObject *scorer_get_n_features(CoreScorer *self, void *closure) {
    (void)closure;
    return PyLong_FromUnsignedLong(ts_scorer_n_features(self->scorer));
}
static PyObject *scorer_get_n_outputs(CoreScorer *self, void *closure) {
    (void)closure;
    return PyLong_FromUnsignedLong(self->n_outputs);
}
static PyObject *scorer_get_n_threads(CoreScorer *self, void *closure) {
    (void)closure;
    return PyLong_FromUnsignedLong(ts_scorer_n_threads(self->scorer));
}
static PyObject *scorer_get_plan_report(CoreScorer *self, void *closure) {
    (void)closure;
    return PyUnicode_FromString(ts_scorer_plan_report(self->scorer));
}

static PyGetSetDef scorer_getset[] = {
    {"engine", (getter)scorer_get_engine, NULL, "the engine used (never 'auto')", NULL},
    {"isa", (getter)scorer_get_isa, NULL, "the instruction set used", NULL},
    {"n_features", (getter)scorer_get_n_features, NULL, "columns a row must have", NULL},
    {"n_outputs", (getter)scorer_get_n_outputs, NULL, "scores per row", NULL},
    {"n_threads", (getter)scorer_get_n_threads, NULL, "threads per batch", NULL},
    {"plan_report", (getter)scorer_get_plan_report, NULL, "why this engine", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef scorer_methods[] = {
    {"score", (PyCFunction)(void (*)(void))scorer_score, METH_FASTCALL,
     "score(X, transform=0, param=1.0, divisor=0.0) -> ndarray or NotImplemented."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject CoreScorerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "treescore._core.Scorer",
    .tp_basicsize = sizeof(CoreScorer),
    .tp_dealloc = (destructor)scorer_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A libtreescore scorer (made by Model.scorer); thread-safe.",
    .tp_methods = scorer_methods,
    .tp_getset = scorer_getset,
};

/* ---- module ---------------------------------------------------------------------- */

static PyObject *core_set_numpy(PyObject *mod, PyObject *empty) {
    (void)mod;
    Py_XINCREF(empty);
    Py_XSETREF(np_empty, empty);
    Py_RETURN_NONE;
}

/* transform_values(values, k, transform, param, divisor): the transform applied to a
 * list of floats (for tests of the transforms on given margins). */
static PyObject *core_transform_values(PyObject *mod, PyObject *args) {
    (void)mod;
    PyObject *seq;
    unsigned k;
    int tr;
    double param, divisor;
    if (!PyArg_ParseTuple(args, "OIidd:transform_values", &seq, &k, &tr, &param, &divisor)) return NULL;
    PyObject *fast = PySequence_Fast(seq, "values must be a sequence");
    if (!fast) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (k == 0 || n % k != 0 || tr < 0 || tr >= TR_COUNT) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_ValueError, "bad k or transform");
        return NULL;
    }
    double *v = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(double));
    if (!v) {
        Py_DECREF(fast);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) v[i] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(fast, i));
    Py_DECREF(fast);
    if (PyErr_Occurred()) {
        PyMem_Free(v);
        return NULL;
    }
    apply_transform(v, (size_t)n / k, k, tr, param, divisor);
    Py_ssize_t n_out = tr == TR_XGB_ARGMAX ? n / k : n;
    PyObject *list = PyList_New(n_out);
    for (Py_ssize_t i = 0; list && i < n_out; i++) PyList_SET_ITEM(list, i, PyFloat_FromDouble(v[i]));
    PyMem_Free(v);
    return list;
}

static PyObject *core_cpu_count(PyObject *mod, PyObject *unused) {
    (void)mod;
    (void)unused;
    return PyLong_FromUnsignedLong(ts_cpu_count());
}

/* ---- _core.build: a model from arrays (ts_model_builder) --------------------------- */

/* A C-contiguous buffer of n items of `itemsize` bytes whose format is a number of kind
 * 'i' (signed integer), 'u' (unsigned) or 'f' (float); NULL-able when obj is None. */
static int tree_buffer(PyObject *obj, Py_buffer *b, int itemsize, char kind, Py_ssize_t n, const char *what,
                       int optional) {
    b->obj = NULL;
    b->buf = NULL;
    if (obj == Py_None && optional) return 0;
    if (PyObject_GetBuffer(obj, b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) return -1;
    const char *f = b->format ? b->format : "B";
    if (*f == '@' || *f == '=' || *f == '<') f++;
    int ok = b->itemsize == itemsize && f[0] && !f[1] &&
             (kind == 'i' ? strchr("bhilq", f[0]) != NULL
                          : kind == 'u' ? strchr("BHILQ", f[0]) != NULL : strchr("fd", f[0]) != NULL);
    if (!ok || b->len != n * itemsize) {
        PyErr_Format(PyExc_ValueError, "build: %s must be %zd %s of %d bytes (got format '%s', %zd bytes)", what,
                     n, kind == 'f' ? "floats" : "integers", itemsize, b->format ? b->format : "B", b->len);
        PyBuffer_Release(b);
        b->obj = NULL;
        return -1;
    }
    return 0;
}

/* build(n_features, n_outputs, aggregation, base_scores, feature_names, trees) -> Model.
 * trees: a sequence of tuples (children_left, children_right, feature, threshold,
 * compares, missing_left, values, n_values, output, weight, input, category_set,
 * category_words, n_category_sets, category_set_words): int64 / float64 / uint8 / uint32
 * C-contiguous arrays (compares, missing_left and the category arrays may be None). */
static PyObject *core_build(PyObject *mod, PyObject *args) {
    (void)mod;
    unsigned int n_features, n_outputs;
    int aggregation;
    PyObject *base, *names, *trees;
    if (!PyArg_ParseTuple(args, "IIiOOO:build", &n_features, &n_outputs, &aggregation, &base, &names, &trees))
        return NULL;
    ts_error err;
    memset(&err, 0, sizeof err);
    ts_model_builder *b = NULL;
    ts_status st = ts_model_builder_create(n_features, n_outputs, &b, &err);
    if (st != TS_OK) return raise_ts(st, &err);
    PyObject *seq = PySequence_Fast(trees, "build: trees must be a sequence");
    if (!seq) goto fail;
    for (Py_ssize_t t = 0; t < PySequence_Fast_GET_SIZE(seq); t++) {
        PyObject *tup = PySequence_Fast_GET_ITEM(seq, t);
        PyObject *o[15];
        if (!PyTuple_Check(tup) || PyTuple_GET_SIZE(tup) != 15) {
            PyErr_SetString(PyExc_TypeError, "build: each tree is a tuple of 15 items");
            goto fail_seq;
        }
        for (int i = 0; i < 15; i++) o[i] = PyTuple_GET_ITEM(tup, i);
        Py_ssize_t n = PyObject_Length(o[0]);
        unsigned long nv = PyLong_AsUnsignedLong(o[7]), out = PyLong_AsUnsignedLong(o[8]);
        double weight = PyFloat_AsDouble(o[9]);
        long input = PyLong_AsLong(o[10]);
        unsigned long n_sets = PyLong_AsUnsignedLong(o[13]), set_words = PyLong_AsUnsignedLong(o[14]);
        if (n < 0 || PyErr_Occurred()) goto fail_seq;
        if (n > UINT32_MAX || nv > UINT32_MAX || out > UINT32_MAX || n_sets > UINT32_MAX || set_words > UINT32_MAX) {
            PyErr_SetString(PyExc_OverflowError, "build: a count past 2^32");
            goto fail_seq;
        }
        Py_buffer bl, br, bf, bt, bc, bm, bv, bs, bw;
        Py_buffer *all[9] = {&bl, &br, &bf, &bt, &bc, &bm, &bv, &bs, &bw};
        for (int i = 0; i < 9; i++) all[i]->obj = NULL;
        int bad = tree_buffer(o[0], &bl, 8, 'i', n, "children_left", 0) ||
                  tree_buffer(o[1], &br, 8, 'i', n, "children_right", 0) ||
                  tree_buffer(o[2], &bf, 8, 'i', n, "feature", 0) ||
                  tree_buffer(o[3], &bt, 8, 'f', n, "threshold", 0) ||
                  tree_buffer(o[4], &bc, 1, 'u', n, "compares", 1) ||
                  tree_buffer(o[5], &bm, 1, 'u', n, "missing_left", 1) ||
                  tree_buffer(o[6], &bv, 8, 'f', n * (Py_ssize_t)nv, "values", 0) ||
                  tree_buffer(o[11], &bs, 8, 'i', n, "category_set", 1) ||
                  tree_buffer(o[12], &bw, 4, 'u', (Py_ssize_t)(n_sets * set_words), "category_words", 1);
        if (!bad) {
            ts_tree_arrays a;
            ts_tree_arrays_init(&a);
            a.n_nodes = (uint32_t)n;
            a.children_left = bl.buf;
            a.children_right = br.buf;
            a.feature = bf.buf;
            a.threshold = bt.buf;
            a.compares = bc.obj ? bc.buf : NULL;
            a.missing_left = bm.obj ? bm.buf : NULL;
            a.values = bv.buf;
            a.n_values = (uint32_t)nv;
            a.output = (uint32_t)out;
            a.weight = weight;
            a.input = input == 1 ? TS_INPUT_FLOAT64 : input == 0 ? TS_INPUT_FLOAT32 : (ts_input_type)input;
            a.category_set = bs.obj ? bs.buf : NULL;
            a.category_words = bw.obj ? bw.buf : NULL;
            a.n_category_sets = (uint32_t)n_sets;
            a.category_set_words = (uint32_t)set_words;
            st = ts_model_builder_add_tree(b, &a, &err);
        }
        for (int i = 0; i < 9; i++)
            if (all[i]->obj) PyBuffer_Release(all[i]);
        if (bad) goto fail_seq;
        if (st != TS_OK) {
            Py_DECREF(seq);
            ts_model_builder_free(b);
            return raise_ts(st, &err);
        }
    }
    Py_DECREF(seq);
    seq = NULL;
    if (aggregation) st = ts_model_builder_set_aggregation(b, (ts_aggregation)aggregation, &err);
    if (st == TS_OK && base != Py_None) {
        PyObject *bs = PySequence_Fast(base, "build: base_scores must be a sequence");
        if (!bs) goto fail;
        Py_ssize_t nb = PySequence_Fast_GET_SIZE(bs);
        double *v = PyMem_Malloc((size_t)(nb + 1) * sizeof *v);
        for (Py_ssize_t i = 0; v && i < nb; i++) v[i] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(bs, i));
        Py_DECREF(bs);
        if (!v || PyErr_Occurred()) {
            PyMem_Free(v);
            if (!PyErr_Occurred()) PyErr_NoMemory();
            goto fail;
        }
        st = ts_model_builder_set_base_scores(b, v, (uint32_t)nb, &err);
        PyMem_Free(v);
    }
    if (st == TS_OK && names != Py_None) {
        PyObject *ns = PySequence_Fast(names, "build: feature_names must be a sequence");
        if (!ns) goto fail;
        Py_ssize_t nn = PySequence_Fast_GET_SIZE(ns);
        const char **v = PyMem_Malloc((size_t)(nn + 1) * sizeof *v);
        for (Py_ssize_t i = 0; v && i < nn; i++) v[i] = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(ns, i));
        if (!v || PyErr_Occurred()) {
            PyMem_Free(v);
            Py_DECREF(ns);
            if (!PyErr_Occurred()) PyErr_NoMemory();
            goto fail;
        }
        st = ts_model_builder_set_feature_names(b, v, (uint32_t)nn, &err);
        PyMem_Free(v);
        Py_DECREF(ns);
    }
    ts_model *model = NULL;
    if (st == TS_OK) st = ts_model_builder_finish(b, &model, &err);
    ts_model_builder_free(b);
    if (st != TS_OK) return raise_ts(st, &err);
    CoreModel *self = PyObject_New(CoreModel, &CoreModelType);
    if (!self) {
        ts_model_free(model);
        return NULL;
    }
    self->model = model;
    return (PyObject *)self;
fail_seq:
    Py_XDECREF(seq);
fail:
    ts_model_builder_free(b);
    return NULL;
}

static PyMethodDef core_methods[] = {
    {"load", core_load, METH_VARARGS, "load(data, format, name) -> Model: ts_model_load_buffer (GIL released)."},
    {"_set_numpy", core_set_numpy, METH_O, "_set_numpy(numpy.empty): how outputs are allocated."},
    {"transform_values", core_transform_values, METH_VARARGS,
     "transform_values(values, k, transform, param, divisor) -> list: the output transform alone."},
    {"cpu_count", core_cpu_count, METH_NOARGS, "cpu_count() -> int: ts_cpu_count()."},
    {"build", core_build, METH_VARARGS,
     "build(n_features, n_outputs, aggregation, base_scores, feature_names, trees) -> Model: ts_model_builder."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT, .m_name = "treescore._core",
    .m_doc = "The C core of treescore: libtreescore's models and scorers.", .m_size = -1,
    .m_methods = core_methods,
};

PyMODINIT_FUNC PyInit__core(void);

PyMODINIT_FUNC PyInit__core(void) {
    if (PyType_Ready(&CoreModelType) < 0 || PyType_Ready(&CoreScorerType) < 0) return NULL;
    PyObject *m = PyModule_Create(&core_module);
    if (!m) return NULL;
    /* Every Error has a status: the class gives TS_ERR_GENERIC to one raised without it. */
    PyObject *attrs = Py_BuildValue("{s:s}", "status", ts_status_name(TS_ERR_GENERIC));
    if (!attrs) goto fail;
    core_error = PyErr_NewExceptionWithDoc("treescore.Error",
                                           "A bad model, bad data or a failed libtreescore call; "
                                           "`status` names the ts_status (\"TS_ERR_PARSE\", ...).",
                                           PyExc_ValueError, attrs);
    Py_DECREF(attrs);
    if (!core_error) goto fail;
    Py_INCREF(core_error);
    if (PyModule_AddObject(m, "Error", core_error) < 0) goto fail;
    Py_INCREF(&CoreModelType);
    if (PyModule_AddObject(m, "Model", (PyObject *)&CoreModelType) < 0) goto fail;
    Py_INCREF(&CoreScorerType);
    if (PyModule_AddObject(m, "Scorer", (PyObject *)&CoreScorerType) < 0) goto fail;
    if (PyModule_AddStringConstant(m, "version", ts_version_string()) < 0) goto fail;
    /* the loader's limit (src/io/limits.h): Model(model_file=) reads no more than this */
    PyObject *limit = PyLong_FromSize_t(TSIO_MAX_MODEL_BYTES);
    if (!limit || PyModule_AddObject(m, "max_model_bytes", limit) < 0) {
        Py_XDECREF(limit);
        goto fail;
    }
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
