/* model_onnx.c: loader for ONNX-ML tree ensembles (TreeEnsembleRegressor / TreeEnsembleClassifier of ai.onnx.ml 1 and 3, TreeEnsemble of ai.onnx.ml 5), built through the model builder. */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "io/loaders.h"
#include "io/protobuf.h"
#include "io/text.h"
#include "model/forest.h"

/*
 * Schema (onnx/onnx.proto, field numbers):
 *   ModelProto      1 ir_version  7 graph  8 opset_import (OperatorSetIdProto: 1 domain 2 version)
 *   GraphProto      1 node  5 initializer (TensorProto)  11 input  12 output (ValueInfoProto)
 *   NodeProto       1 input  2 output  3 name  4 op_type  5 attribute  7 domain
 *   AttributeProto  1 name  2 f  3 i  4 s  5 t  7 floats  8 ints  9 strings
 *   TensorProto     1 dims  2 data_type  4 float_data  5 int32_data  7 int64_data  8 name
 *                   9 raw_data  10 double_data  11 uint64_data  14 data_location
 *   ValueInfoProto  1 name  2 type (TypeProto: 1 tensor_type (1 elem_type  2 shape (1 dim:
 *                   1 dim_value)))
 *
 * Semantics (ONNX Runtime, onnxruntime/core/providers/cpu/ml/tree_ensemble_common.h,
 * tree_ensemble_aggregator.h, ml_common.h; onnx/docs/Operators-ml.md):
 *   - a node is "x MODE value" (LEQ, LT, GTE, GT, EQ, NEQ; opset 5 adds MEMBER), true to
 *     truenodeids; NaN makes every comparison false except NEQ (true), so it goes to the
 *     false child unless missing_value_tracks_true is 1. x and the threshold are compared
 *     in the threshold type: float for float input (values given as doubles are rounded
 *     to float, as ONNX Runtime stores them), double for double input.
 *   - opsets 1/3: the nodes of a tree are contiguous in the lists, the first one listed is
 *     the root; (treeid, nodeid) name a node; target_* / class_* give leaves their
 *     (output, weight) pairs. Opset 5: nodes by position, tree_roots, children that are
 *     leaves (nodes_trueleafs / falseleafs) index leaf_targetids / leaf_weights; a root
 *     whose two children are the same leaf is a one-leaf tree.
 *   - score k = base_k + sum over trees (in order) of the weights of the leaf reached for
 *     k (SUM); AVERAGE divides the sum by the number of trees, then adds base_k. base_k
 *     only where the row's leaves hold an entry for k (check_untouched refuses the rest).
 * The forest is built through the model builder (ts_model_builder_*): LEQ/LT/GTE/GT map
 * to its comparisons with missing_left = missing_value_tracks_true; EQ is "x <= t and
 * not x < t" (two builder nodes, the false subtree copied), NEQ its negation (NaN to the
 * true side), MEMBER a category set (the builder's TS_CMP_IN, exact membership, one node)
 * where its members are integers in [0, 65536) and NaN does not track true, else a chain
 * "x < v1 ? F : x <= v1 ? T : x < v2 ? ..." over the sorted members (subtrees copied).
 * Chains of EQ nodes on one feature that share their true subtree (onnxmltools' LightGBM
 * categorical splits) are first folded into MEMBER nodes (fold_eq_chains). Leaf weights and base values are rounded to the threshold
 * type as ONNX Runtime stores them; the scores are then summed in double (ONNX Runtime
 * sums in float for float input: treescore's score is the exact sum of the same values).
 *
 * Around the tree node the graph may hold only what cannot change its scores: Identity,
 * Cast of the input to float/double or of the outputs, ZipMap, Reshape / Flatten /
 * Squeeze / Unsqueeze of the outputs, Constant, Mul of the scores by a constant 1, and one
 * Add of a constant to the scores (folded into the base values, SUM only, post_transform
 * NONE: ONNX Runtime adds after the transform; and every score the graph outputs must
 * have gone through it). Anything else is refused, naming the node. The raw scores are those before post_transform; the
 * model's objective string records the transform for the Python package:
 * "onnx post_transform=NAME" with " binary" (one score column of a two-class classifier)
 * or " binary_positive" (the same, all weights >= 0) appended.
 */

#define MAX_GRAPH_NODES 4096
#define MAX_EXPANDED (1u << 26) /* builder nodes over all trees, after EQ/NEQ/MEMBER copies */

enum { M_LEQ, M_LT, M_GTE, M_GT, M_EQ, M_NEQ, M_MEMBER, M_LEAF };
enum { K_NONE, K_X, K_SCORE, K_LABEL, K_CONST, K_OTHER };
enum { AGG_SUM, AGG_AVERAGE };
static const char *const POST_NAMES[] = {"NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT"};

typedef struct span {
    size_t pos, len;
} span;

typedef struct gnode {
    tspb_msg msg;
    span op, domain, name;
} gnode;

typedef struct value {
    span name;
    int kind;
    int dtype;     /* K_X: 1 float, 11 double */
    tspb_msg t;    /* K_CONST: the tensor */
    int added;     /* K_SCORE / K_OTHER: computed through the Add of a constant */
    int f32;       /* K_X: rounded to float32 on the way (a float graph input, a Cast to float) */
} value;

/* A tree ensemble in one form: nodes (internal and leaves) by index, roots, leaf weights. */
/* 32 bytes (a forest of 4 million nodes holds 128 MB of them while it loads): indices
 * in 32 bits, ens.n_x and ens.n_members checked below 2^32 (xnode_limit), features below
 * TSM_MAX_FEATURES checked before they are stored. */
typedef struct xnode {
    double thr;
    uint32_t t, f;             /* xnode indices */
    int32_t feature;
    uint32_t mem_off, mem_n;   /* MEMBER: members[mem_off, +mem_n) */
    uint8_t mode, mtrue;
} xnode;
_Static_assert(sizeof(xnode) <= 32, "xnode is 32 bytes");
_Static_assert(TSM_MAX_FEATURES <= INT32_MAX, "a feature fits xnode.feature");

typedef struct ens {
    xnode *x;
    size_t n_x;
    size_t *roots;
    size_t n_roots;
    size_t *w_off; /* n_x + 1: the leaf weights of xnode i are w_tgt/w_val[w_off[i], w_off[i+1]) */
    int64_t *w_tgt;
    double *w_val;
    double *members;
    size_t n_members;
    uint32_t K;
    double *base; /* K */
    int agg, post;
    int binary; /* 0, 1 (one column of two classes), 2 (the same, all weights >= 0) */
    int64_t max_feature;
} ens;

typedef struct ox {
    const uint8_t *buf;
    size_t size;
    const char *name;
    ts_error *err;
    int64_t opset_ml;
    tspb_msg graph;
    gnode *nodes;
    size_t n_nodes;
    value *vals;
    size_t n_vals;
    int in_dtype;        /* the graph input's element type */
    int64_t in_width;    /* its second dimension, or -1 */
    int x_type;          /* what reaches the tree: 1 float, 11 double (its thresholds' type) */
    int x_f32;           /* the tree's x went through float32 (graph input or a Cast): rows are
                            rounded to float32 even where the tree compares doubles */
    ens e;
    double *add;         /* the constant an Add puts on the scores */
    size_t n_add;
} ox;

/* ---- errors ------------------------------------------------------------------------ */

static ts_status fail(ox *c, ts_status st, const char *fmt, ...) TS_PRINTF(3, 4);
static ts_status fail(ox *c, ts_status st, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tsio_fail(c->err, st, c->name, 0, 0, "%s", msg);
}

static ts_status malformed(ox *c, const char *what) {
    return fail(c, TS_ERR_PARSE, "%s: malformed protobuf (a length, varint or tag outside the file)", what);
}

static ts_status oom(ox *c) { return fail(c, TS_ERR_NO_MEMORY, "out of memory"); }

/* ---- strings ----------------------------------------------------------------------- */

static int span_is(const ox *c, span s, const char *lit) {
    size_t n = strlen(lit);
    return s.len == n && memcmp(c->buf + s.pos, lit, n) == 0;
}

static int span_eq(const ox *c, span a, span b) {
    return a.len == b.len && memcmp(c->buf + a.pos, c->buf + b.pos, a.len) == 0;
}

/* A printable excerpt of s. */
static const char *text(const ox *c, span s, char *buf, size_t cap) {
    tsio_excerpt(buf, cap, (const char *)c->buf + s.pos, s.len);
    return buf;
}

static span field_span(const tspb_field *f) {
    span s = {f->pos, f->len};
    return s;
}

/* ---- attributes ---------------------------------------------------------------------- */

/* The attribute `name` of node n: 1 found (*a), 0 absent, -1 malformed. */
static int attr(const ox *c, const gnode *n, const char *name, tspb_msg *a) {
    tspb_msg it = n->msg;
    tspb_field f = {0};
    int r;
    while ((r = tspb_next(&it, &f)) > 0) {
        if (f.num != 5 || f.wire != TSPB_LEN) continue;
        tspb_msg am = tspb_sub(&it, &f), ai = am;
        tspb_field g = {0};
        int s;
        /* the name decides: stop at it (an attribute's values may be millions of fields) */
        while ((s = tspb_next(&ai, &g)) > 0)
            if (g.num == 1 && g.wire == TSPB_LEN) {
                if (span_is(c, field_span(&g), name)) {
                    *a = am;
                    return 1;
                }
                break;
            }
        if (s < 0) return -1;
    }
    return r < 0 ? -1 : 0;
}

/* Scalar field `num` of wire type `wire` in message m (the last occurrence). 1/0/-1. */
static int scalar(tspb_msg m, uint32_t num, int wire, tspb_field *out) {
    memset(out, 0, sizeof *out);
    tspb_field f = {0};
    int r, found = 0;
    while ((r = tspb_next(&m, &f)) > 0)
        if (f.num == num) {
            if (f.wire != wire) return -1;
            *out = f;
            found = 1;
        }
    return r < 0 ? -1 : found;
}

static ts_status bad_attr(ox *c, const char *name) {
    return fail(c, TS_ERR_PARSE, "attribute %s: malformed (protobuf out of range or of the wrong type)", name);
}

/* An INT attribute (field 3). *present 0 leaves *v. */
static ts_status attr_int(ox *c, const gnode *n, const char *name, int64_t *v, int *present) {
    tspb_msg a;
    int r = attr(c, n, name, &a);
    *present = 0;
    if (r < 0) return bad_attr(c, name);
    if (r == 0) return TS_OK;
    tspb_field f = {0};
    r = scalar(a, 3, TSPB_VARINT, &f);
    if (r < 0) return bad_attr(c, name);
    if (r == 0) return TS_OK;
    *v = (int64_t)f.v;
    *present = 1;
    return TS_OK;
}

/* A STRING attribute (field 4). */
static ts_status attr_str(ox *c, const gnode *n, const char *name, span *s, int *present) {
    tspb_msg a;
    int r = attr(c, n, name, &a);
    *present = 0;
    if (r < 0) return bad_attr(c, name);
    if (r == 0) return TS_OK;
    tspb_field f = {0};
    r = scalar(a, 4, TSPB_LEN, &f);
    if (r < 0) return bad_attr(c, name);
    if (r == 0) return TS_OK;
    *s = field_span(&f);
    *present = 1;
    return TS_OK;
}

/* The repeated field `num` of attribute `name` (INTS 8, FLOATS 7) as int64 or double.
 * *out NULL and *n 0 when absent; *present says whether the attribute is there. */
static ts_status attr_list(ox *c, const gnode *n, const char *name, uint32_t num, tspb_scalar type, int64_t **oi,
                           double **od, size_t *cnt, int *present) {
    tspb_msg a;
    int r = attr(c, n, name, &a);
    *cnt = 0;
    *present = r > 0;
    if (oi) *oi = NULL;
    if (od) *od = NULL;
    if (r < 0) return bad_attr(c, name);
    if (r == 0) return TS_OK;
    size_t k = 0;
    if (tspb_repeated(&a, num, type, &k, NULL, NULL) < 0) return bad_attr(c, name);
    if (k == 0) return TS_OK;
    if (oi) *oi = malloc(k * sizeof **oi);
    if (od) *od = malloc(k * sizeof **od);
    if ((oi && !*oi) || (od && !*od)) return oom(c);
    if (tspb_repeated(&a, num, type, &k, oi ? *oi : NULL, od ? *od : NULL) < 0) return bad_attr(c, name);
    *cnt = k;
    return TS_OK;
}

/* A STRINGS attribute (field 9) as spans. */
static ts_status attr_strings(ox *c, const gnode *n, const char *name, span **out, size_t *cnt, int *present) {
    tspb_msg a;
    int r = attr(c, n, name, &a);
    *out = NULL;
    *cnt = 0;
    *present = r > 0;
    if (r < 0) return bad_attr(c, name);
    if (r == 0) return TS_OK;
    tspb_msg it = a;
    tspb_field f = {0};
    size_t k = 0;
    while ((r = tspb_next(&it, &f)) > 0)
        if (f.num == 9) {
            if (f.wire != TSPB_LEN) return bad_attr(c, name);
            k++;
        }
    if (r < 0) return bad_attr(c, name);
    if (k == 0) return TS_OK;
    *out = malloc(k * sizeof **out);
    if (!*out) return oom(c);
    it = a;
    k = 0;
    while (tspb_next(&it, &f) > 0)
        if (f.num == 9) (*out)[k++] = field_span(&f);
    *cnt = k;
    return TS_OK;
}

/* The values of a TensorProto as doubles (*dtype its data_type). */
static ts_status tensor_values(ox *c, tspb_msg t, const char *what, double **out, size_t *cnt, int *dtype) {
    tspb_field f = {0};
    int r;
    int64_t dt = 0;
    span raw = {0, 0};
    int has_raw = 0;
    uint64_t elems = 1;
    tspb_msg it = t;
    *out = NULL;
    *cnt = 0;
    while ((r = tspb_next(&it, &f)) > 0) {
        if (f.num == 2 && f.wire == TSPB_VARINT) dt = (int64_t)f.v;
        else if (f.num == 9 && f.wire == TSPB_LEN) {
            raw = field_span(&f);
            has_raw = 1;
        } else if (f.num == 14 && f.wire == TSPB_VARINT && f.v != 0)
            return fail(c, TS_ERR_UNSUPPORTED, "%s: a tensor with external data is not supported", what);
    }
    if (r < 0) return malformed(c, what);
    size_t nd = 0;
    if (tspb_repeated(&t, 1, TSPB_S_VARINT, &nd, NULL, NULL) < 0) return malformed(c, what);
    if (nd) {
        int64_t *dims = malloc(nd * sizeof *dims);
        if (!dims) return oom(c);
        tspb_repeated(&t, 1, TSPB_S_VARINT, &nd, dims, NULL);
        for (size_t i = 0; i < nd; i++) {
            if (dims[i] < 0 || (dims[i] > 0 && elems > ((uint64_t)1 << 40) / (uint64_t)dims[i])) {
                long long bad_dim = (long long)dims[i];
                free(dims);
                return fail(c, TS_ERR_PARSE, "%s: tensor dimension %lld out of range", what, bad_dim);
            }
            elems *= (uint64_t)dims[i];
        }
        free(dims);
    }
    *dtype = (int)dt;
    size_t width;
    uint32_t num;
    tspb_scalar type;
    switch (dt) {
    case 1: width = 4; num = 4; type = TSPB_S_FLOAT; break;                 /* FLOAT */
    case 11: width = 8; num = 10; type = TSPB_S_DOUBLE; break;              /* DOUBLE */
    case 2: case 3: case 4: case 5: case 6: case 9: width = dt == 6 ? 4 : dt >= 4 && dt <= 5 ? 2 : 1;
        num = 5; type = TSPB_S_VARINT; break;                              /* small ints: int32_data */
    case 7: width = 8; num = 7; type = TSPB_S_VARINT; break;                /* INT64 */
    default: return fail(c, TS_ERR_UNSUPPORTED, "%s: tensor data type %lld is not supported", what, (long long)dt);
    }
    if (has_raw) {
        if (raw.len % width) return fail(c, TS_ERR_PARSE, "%s: raw_data of %zu bytes is not a whole number of elements",
                                         what, raw.len);
        size_t k = raw.len / width;
        if ((uint64_t)k != elems) goto mismatch;
        if (k) {
            *out = malloc(k * sizeof **out);
            if (!*out) return oom(c);
        }
        const uint8_t *p = c->buf + raw.pos;
        for (size_t i = 0; i < k; i++, p += width) {
            uint64_t v = 0;
            for (size_t b = 0; b < width; b++) v |= (uint64_t)p[b] << (8 * b);
            double d;
            if (dt == 1) d = (double)tspb_float_bits((uint32_t)v);
            else if (dt == 11) d = tspb_double_bits(v);
            else if (dt == 3) d = (double)(int8_t)v;
            else if (dt == 5) d = (double)(int16_t)v;
            else if (dt == 6) d = (double)(int32_t)v;
            else if (dt == 7) d = (double)(int64_t)v;
            else d = (double)v;
            (*out)[i] = d;
        }
        *cnt = k;
        return TS_OK;
    }
    size_t k = 0;
    if (tspb_repeated(&t, num, type, &k, NULL, NULL) < 0) return malformed(c, what);
    if ((uint64_t)k != elems) goto mismatch;
    if (k) {
        *out = malloc(k * sizeof **out);
        int64_t *tmp = type == TSPB_S_VARINT ? malloc(k * sizeof *tmp) : NULL;
        if (!*out || (type == TSPB_S_VARINT && !tmp)) {
            free(tmp);
            return oom(c);
        }
        tspb_repeated(&t, num, type, &k, tmp, *out);
        if (tmp)
            for (size_t i = 0; i < k; i++)
                (*out)[i] = dt == 6 ? (double)(int32_t)tmp[i] : (double)tmp[i];
        free(tmp);
    }
    *cnt = k;
    return TS_OK;
mismatch:
    free(*out);
    *out = NULL;
    return fail(c, TS_ERR_PARSE, "%s: the tensor's data does not match its dimensions (%llu elements)", what,
                (unsigned long long)elems);
}

/* A TENSOR attribute (field 5). */
static ts_status attr_tensor(ox *c, const gnode *n, const char *name, double **out, size_t *cnt, int *dtype,
                             int *present) {
    tspb_msg a;
    int r = attr(c, n, name, &a);
    *out = NULL;
    *cnt = 0;
    *present = 0;
    if (r < 0) return bad_attr(c, name);
    if (r == 0) return TS_OK;
    tspb_field f = {0};
    r = scalar(a, 5, TSPB_LEN, &f);
    if (r < 0) return bad_attr(c, name);
    if (r == 0) return TS_OK;
    *present = 1;
    return tensor_values(c, tspb_sub(&a, &f), name, out, cnt, dtype);
}

/* A list of doubles given as FLOATS `name` or as TENSOR `name`_as_tensor. */
static ts_status attr_numbers(ox *c, const gnode *n, const char *name, double **out, size_t *cnt, int *present) {
    char tn[96];
    snprintf(tn, sizeof tn, "%s_as_tensor", name);
    int p1 = 0, p2 = 0, dt = 0;
    tspb_msg twin;
    TS_TRY(attr_list(c, n, name, 7, TSPB_S_FLOAT, NULL, out, cnt, &p1));
    if (p1 && attr(c, n, tn, &twin) > 0) /* ONNX Runtime refuses the model too */
        return fail(c, TS_ERR_INVALID_MODEL, "both %s and %s (one of them only)", name, tn);
    if (p1) {
        *present = 1;
        return TS_OK;
    }
    TS_TRY(attr_tensor(c, n, tn, out, cnt, &dt, &p2));
    *present = p2;
    return TS_OK;
}

/* ---- the graph ------------------------------------------------------------------------ */

static value *find_value(ox *c, span name) {
    for (size_t i = c->n_vals; i-- > 0;)
        if (span_eq(c, c->vals[i].name, name)) return &c->vals[i];
    return NULL;
}

static ts_status add_value(ox *c, span name, int kind, int dtype, tspb_msg t) {
    value *v = realloc(c->vals, (c->n_vals + 1) * sizeof *v);
    if (!v) return oom(c);
    c->vals = v;
    value nv = {name, kind, dtype, t, 0, 0};
    c->vals[c->n_vals++] = nv;
    return TS_OK;
}

/* The element type and second dimension of a ValueInfoProto's tensor type. */
static int value_info(const ox *c, tspb_msg vi, span *name, int *etype, int64_t *width) {
    tspb_field f = {0};
    int r;
    *etype = 0;
    *width = -1;
    (void)c;
    while ((r = tspb_next(&vi, &f)) > 0) {
        if (f.num == 1 && f.wire == TSPB_LEN) *name = field_span(&f);
        if (f.num != 2 || f.wire != TSPB_LEN) continue;
        tspb_msg tp = tspb_sub(&vi, &f);
        tspb_field g = {0};
        while ((r = tspb_next(&tp, &g)) > 0) {
            if (g.num != 1 || g.wire != TSPB_LEN) continue;
            tspb_msg tt = tspb_sub(&tp, &g);
            tspb_field h = {0};
            while ((r = tspb_next(&tt, &h)) > 0) {
                if (h.num == 1 && h.wire == TSPB_VARINT) *etype = (int)h.v;
                if (h.num != 2 || h.wire != TSPB_LEN) continue;
                tspb_msg sh = tspb_sub(&tt, &h);
                tspb_field d = {0};
                int k = 0;
                while ((r = tspb_next(&sh, &d)) > 0) {
                    if (d.num != 1 || d.wire != TSPB_LEN) continue;
                    tspb_field dv = {0};
                    int q = scalar(tspb_sub(&sh, &d), 1, TSPB_VARINT, &dv);
                    if (q < 0) return -1;
                    if (k == 1) *width = q > 0 && (int64_t)dv.v >= 0 ? (int64_t)dv.v : -1;
                    k++;
                }
                if (r < 0) return -1;
            }
            if (r < 0) return -1;
        }
        if (r < 0) return -1;
    }
    return r < 0 ? -1 : 1;
}

/* The strings of repeated field num (NodeProto input 1 / output 2) into *out. */
static ts_status node_names(ox *c, const gnode *n, uint32_t num, span *out, size_t cap, size_t *cnt) {
    tspb_msg it = n->msg;
    tspb_field f = {0};
    int r;
    *cnt = 0;
    while ((r = tspb_next(&it, &f)) > 0)
        if (f.num == num && f.wire == TSPB_LEN) {
            if (*cnt < cap) out[*cnt] = field_span(&f);
            (*cnt)++;
        }
    return r < 0 ? malformed(c, "node") : TS_OK;
}

static ts_status refuse_node(ox *c, const gnode *n, size_t i, const char *why) {
    char op[64], nm[64], dm[64];
    return fail(c, TS_ERR_UNSUPPORTED, "graph node %zu (op_type '%s'%s%s%s%s%s): %s; treescore reads a graph of one "
                "tree-ensemble node (TreeEnsembleRegressor, TreeEnsembleClassifier, TreeEnsemble) and the nodes "
                "converters put around it (Cast, Identity, ZipMap, Reshape, an Add of a constant)", i,
                text(c, n->op, op, sizeof op), n->name.len ? ", name '" : "", n->name.len ? text(c, n->name, nm, sizeof nm) : "",
                n->name.len ? "'" : "", n->domain.len ? ", domain " : "", n->domain.len ? text(c, n->domain, dm, sizeof dm) : "",
                why);
}

/* ---- reading the tree node into the ens form --------------------------------------------- */

typedef struct idpair {
    int64_t id;
    size_t idx;
} idpair;

static int cmp_pair(const void *a, const void *b) {
    const idpair *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id ? 1 : (x->idx < y->idx ? -1 : x->idx > y->idx);
}

/* p sorted by id, ids distinct (checked first): ids 0 .. n - 1 (the converters' own
 * numbering) are their own positions, else a binary search. */
static const idpair *find_pair(const idpair *p, size_t n, int64_t id) {
    if (n && p[0].id == 0 && p[n - 1].id == (int64_t)n - 1) return id >= 0 && id < (int64_t)n ? &p[id] : NULL;
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && p[lo].id == id ? &p[lo] : NULL;
}

static int mode_of(const ox *c, span s) {
    static const char *const names[] = {"BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT",
                                        "BRANCH_EQ",  "BRANCH_NEQ", "BRANCH_MEMBER", "LEAF"};
    static const size_t lens[] = {10, 9, 10, 9, 9, 10, 13, 4};
    for (int i = 0; i < 8; i++)
        if (s.len == lens[i] && memcmp(c->buf + s.pos, names[i], lens[i]) == 0) return i;
    return -1;
}

static int post_of(const ox *c, span s) {
    for (int i = 0; i < 5; i++)
        if (span_is(c, s, POST_NAMES[i])) return i;
    return -1;
}

/* Round to the threshold type (float for float input). */
static double as_type(const ox *c, double v) { return c->x_type == 1 ? (double)(float)v : v; }

typedef struct v3 {
    int64_t *treeids, *nodeids, *featureids, *truenodeids, *falsenodeids, *mtrue, *w_ids, *w_nodeids, *w_treeids;
    int64_t *labels_i;
    double *values, *weights, *base;
    span *modes, *labels_s;
    size_t n, n_tr, n_fa, n_fe, n_no, n_mt, n_v, n_w, n_wi, n_wn, n_wt, n_base, n_modes, n_li, n_ls;
    idpair *ids;
} v3;

static void v3_free(v3 *a) {
    free(a->treeids); free(a->nodeids); free(a->featureids); free(a->truenodeids); free(a->falsenodeids);
    free(a->mtrue); free(a->w_ids); free(a->w_nodeids); free(a->w_treeids); free(a->labels_i);
    free(a->values); free(a->weights); free(a->base); free(a->modes); free(a->labels_s); free(a->ids);
}

/* The node attributes e->x now holds, freed before the weights are laid out (a quarter
 * of the peak memory of a large forest's load); the ids stay for the weights and errors. */
static void v3_drop_nodes(v3 *a) {
    free(a->featureids); free(a->truenodeids); free(a->falsenodeids); free(a->mtrue); free(a->values); free(a->modes);
    a->featureids = a->truenodeids = a->falsenodeids = a->mtrue = NULL;
    a->values = NULL;
    a->modes = NULL;
}

/* xnode's 32-bit indices (xnode): nodes and members below 2^32. */
static ts_status xnode_limit(ox *c, size_t n) {
    if (n < UINT32_MAX) return TS_OK;
    return fail(c, TS_ERR_LIMIT, "%zu tree nodes (or members): at most %u are supported", n, UINT32_MAX - 1);
}

static ts_status need_len(ox *c, const char *what, size_t have, size_t want) {
    if (have == want) return TS_OK;
    return fail(c, TS_ERR_INVALID_MODEL, "attribute %s has %zu values, nodes_nodeids %zu", what, have, want);
}

/* Leaf weight lists from (id, node index, weight) triples, in the order given. */
static ts_status set_weights(ox *c, const size_t *node_of, const int64_t *tgt, const double *w, size_t n) {
    ens *e = &c->e;
    e->w_off = calloc(e->n_x + 1, sizeof *e->w_off);
    e->w_tgt = n ? malloc(n * sizeof *e->w_tgt) : NULL;
    e->w_val = n ? malloc(n * sizeof *e->w_val) : NULL;
    if (!e->w_off || (n && (!e->w_tgt || !e->w_val))) return oom(c);
    for (size_t i = 0; i < n; i++) e->w_off[node_of[i] + 1]++;
    for (size_t i = 0; i < e->n_x; i++) e->w_off[i + 1] += e->w_off[i];
    size_t *fill = malloc((e->n_x + 1) * sizeof *fill);
    if (!fill) return oom(c);
    memcpy(fill, e->w_off, (e->n_x + 1) * sizeof *fill);
    for (size_t i = 0; i < n; i++) {
        size_t j = fill[node_of[i]]++;
        e->w_tgt[j] = tgt[i];
        e->w_val[j] = as_type(c, w[i]);
    }
    free(fill);
    return TS_OK;
}

/* ONNX Runtime adds base value k only to the rows whose leaves carry a weight for output
 * k (an entry, even of weight 0): for the others it writes 0, and a two-class classifier
 * whose row has no class 1 entry gets [1, 0] (or unset memory). treescore adds the base to
 * every row, so a model where some row may miss output k is refused when that matters:
 * a nonzero base value for k (regressors, one- and two-column classifiers), or class 1 of
 * a two-column classifier. A row surely gets an entry for k when some tree has one at
 * every leaf (its node range [roots[r], roots[r + 1]), unreachable leaves included). */
static ts_status check_untouched(ox *c, int classifier, int64_t K) {
    ens *e = &c->e;
    uint32_t cols = e->K;
    int two = classifier && K == 2 && cols == 2, multi = classifier && K > 2;
    if (multi) return TS_OK; /* ONNX Runtime adds every base value there */
    uint8_t *always = calloc(cols, 1);
    size_t *stamp = malloc(cols * sizeof *stamp), *cnt = calloc(cols, sizeof *cnt);
    if (!always || !stamp || !cnt) {
        free(always), free(stamp), free(cnt);
        return oom(c);
    }
    for (uint32_t k = 0; k < cols; k++) stamp[k] = (size_t)-1;
    for (size_t r = 0; r < e->n_roots; r++) {
        size_t lo = e->roots[r], hi = r + 1 < e->n_roots ? e->roots[r + 1] : e->n_x, leaves = 0;
        for (size_t i = lo; i < hi; i++) {
            if (e->x[i].mode != M_LEAF) continue;
            leaves++;
            for (size_t w = e->w_off[i]; w < e->w_off[i + 1]; w++) {
                size_t k = (size_t)e->w_tgt[w];
                if (stamp[k] != i) { /* one count per leaf and output */
                    if (stamp[k] == (size_t)-1 || stamp[k] < lo) cnt[k] = 0;
                    stamp[k] = i;
                    cnt[k]++;
                }
            }
        }
        for (size_t i = lo; i < hi; i++)
            if (e->x[i].mode == M_LEAF)
                for (size_t w = e->w_off[i]; w < e->w_off[i + 1]; w++)
                    if (cnt[e->w_tgt[w]] == leaves) always[e->w_tgt[w]] = 1;
    }
    ts_status st = TS_OK;
    for (uint32_t k = 0; k < cols && st == TS_OK; k++) {
        if (always[k]) continue;
        const char *what = classifier ? "class" : "target";
        if (e->base[k] != 0)
            st = fail(c, TS_ERR_UNSUPPORTED, "a row can reach only leaves without a weight for %s %u (no tree weighs it "
                      "at every leaf) while its base value is %.9g: ONNX Runtime then writes 0, not the base value, "
                      "for that row; not supported", what, k, e->base[k]);
        else if (two && k == 1)
            st = fail(c, TS_ERR_UNSUPPORTED, "a two-class classifier where a row can reach only leaves without a weight "
                      "for class 1 (no tree weighs it at every leaf): ONNX Runtime then writes [1, 0] (or unset values) "
                      "for that row, not the scores; not supported");
    }
    free(always), free(stamp), free(cnt);
    return st;
}

static ts_status read_v3(ox *c, const gnode *n, int classifier) {
    v3 a = {0};
    ens *e = &c->e;
    ts_status st = TS_OK;
    int p;
    size_t *node_of = NULL;
#define TRY(x) do { if ((st = (x)) != TS_OK) goto done; } while (0)
    TRY(attr_list(c, n, "nodes_treeids", 8, TSPB_S_VARINT, &a.treeids, NULL, &a.n_tr, &p));
    TRY(attr_list(c, n, "nodes_nodeids", 8, TSPB_S_VARINT, &a.nodeids, NULL, &a.n_no, &p));
    TRY(attr_list(c, n, "nodes_featureids", 8, TSPB_S_VARINT, &a.featureids, NULL, &a.n_fe, &p));
    TRY(attr_list(c, n, "nodes_truenodeids", 8, TSPB_S_VARINT, &a.truenodeids, NULL, &a.n_v, &p));
    TRY(attr_list(c, n, "nodes_falsenodeids", 8, TSPB_S_VARINT, &a.falsenodeids, NULL, &a.n_fa, &p));
    TRY(attr_list(c, n, "nodes_missing_value_tracks_true", 8, TSPB_S_VARINT, &a.mtrue, NULL, &a.n_mt, &p));
    TRY(attr_strings(c, n, "nodes_modes", &a.modes, &a.n_modes, &p));
    a.n = a.n_no;
    if (a.n == 0) TRY(fail(c, TS_ERR_INVALID_MODEL, "the tree node has no nodes (nodes_nodeids is empty)"));
    TRY(need_len(c, "nodes_treeids", a.n_tr, a.n));
    TRY(need_len(c, "nodes_featureids", a.n_fe, a.n));
    TRY(need_len(c, "nodes_truenodeids", a.n_v, a.n));
    TRY(need_len(c, "nodes_falsenodeids", a.n_fa, a.n));
    TRY(need_len(c, "nodes_modes", a.n_modes, a.n));
    if (a.n_mt && a.n_mt != a.n) TRY(need_len(c, "nodes_missing_value_tracks_true", a.n_mt, a.n));
    size_t nv = 0;
    TRY(attr_numbers(c, n, "nodes_values", &a.values, &nv, &p));
    TRY(need_len(c, "nodes_values", nv, a.n));
    const char *pre = classifier ? "class" : "target";
    char nm[64];
    snprintf(nm, sizeof nm, "%s_ids", pre);
    TRY(attr_list(c, n, nm, 8, TSPB_S_VARINT, &a.w_ids, NULL, &a.n_wi, &p));
    snprintf(nm, sizeof nm, "%s_nodeids", pre);
    TRY(attr_list(c, n, nm, 8, TSPB_S_VARINT, &a.w_nodeids, NULL, &a.n_wn, &p));
    snprintf(nm, sizeof nm, "%s_treeids", pre);
    TRY(attr_list(c, n, nm, 8, TSPB_S_VARINT, &a.w_treeids, NULL, &a.n_wt, &p));
    snprintf(nm, sizeof nm, "%s_weights", pre);
    TRY(attr_numbers(c, n, nm, &a.weights, &a.n_w, &p));
    if (a.n_wi != a.n_w || a.n_wn != a.n_w || a.n_wt != a.n_w)
        TRY(fail(c, TS_ERR_INVALID_MODEL, "%s_ids, _nodeids, _treeids and _weights have %zu, %zu, %zu and %zu values",
                 pre, a.n_wi, a.n_wn, a.n_wt, a.n_w));
    TRY(attr_numbers(c, n, "base_values", &a.base, &a.n_base, &p));
    span s;
    e->agg = AGG_SUM;
    if (!classifier) {
        TRY(attr_str(c, n, "aggregate_function", &s, &p));
        if (p) {
            if (span_is(c, s, "SUM")) e->agg = AGG_SUM;
            else if (span_is(c, s, "AVERAGE")) e->agg = AGG_AVERAGE;
            else {
                char t[64];
                TRY(fail(c, TS_ERR_UNSUPPORTED, "aggregate_function %s is not supported (SUM and AVERAGE are)",
                         text(c, s, t, sizeof t)));
            }
        }
    }
    e->post = 0;
    TRY(attr_str(c, n, "post_transform", &s, &p));
    if (p && (e->post = post_of(c, s)) < 0) {
        char t[64];
        TRY(fail(c, TS_ERR_UNSUPPORTED, "post_transform %s is not one of NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO, PROBIT",
                 text(c, s, t, sizeof t)));
    }
    /* outputs */
    int64_t K = 0;
    if (classifier) {
        TRY(attr_list(c, n, "classlabels_int64s", 8, TSPB_S_VARINT, &a.labels_i, NULL, &a.n_li, &p));
        TRY(attr_strings(c, n, "classlabels_strings", &a.labels_s, &a.n_ls, &p));
        K = (int64_t)(a.n_li + a.n_ls);
        if (a.n_li && a.n_ls) TRY(fail(c, TS_ERR_INVALID_MODEL, "both classlabels_int64s and classlabels_strings"));
        if (K == 0) TRY(fail(c, TS_ERR_INVALID_MODEL, "the classifier has no class labels"));
    } else {
        TRY(attr_int(c, n, "n_targets", &K, &p));
        if (!p) {
            K = 1;
            for (size_t i = 0; i < a.n_w; i++)
                if (a.w_ids[i] >= K && a.w_ids[i] < (int64_t)TSM_MAX_OUTPUTS) K = a.w_ids[i] + 1;
        }
    }
    if (K < 1 || K > (int64_t)TSM_MAX_OUTPUTS)
        TRY(fail(c, TS_ERR_LIMIT, "%lld %s (1 to %u are supported)", (long long)K, classifier ? "classes" : "targets",
                 TSM_MAX_OUTPUTS));
    for (size_t i = 0; i < a.n_w; i++)
        if (a.w_ids[i] < 0 || a.w_ids[i] >= K)
            TRY(fail(c, TS_ERR_INVALID_MODEL, "%s_ids[%zu] = %lld, outside 0 .. %lld", pre, i, (long long)a.w_ids[i],
                     (long long)K - 1));
    /* the nodes: trees contiguous, the first node listed the root */
    TRY(xnode_limit(c, a.n));
    e->n_x = a.n;
    e->x = calloc(a.n, sizeof *e->x);
    e->roots = malloc(a.n * sizeof *e->roots);
    a.ids = malloc(a.n * sizeof *a.ids);
    if (!e->x || !e->roots || !a.ids) TRY(oom(c));
    size_t tree_start = 0;
    for (size_t i = 0; i <= a.n; i++) {
        if (i < a.n && (i == 0 || a.treeids[i] == a.treeids[i - 1])) continue;
        if (i > 0) {
            /* tree [tree_start, i): map its node ids */
            size_t m = i - tree_start;
            idpair *ids = a.ids + tree_start;
            int sorted = 1;
            for (size_t j = 0; j < m; j++) {
                ids[j].id = a.nodeids[tree_start + j];
                ids[j].idx = tree_start + j;
                sorted &= j == 0 || ids[j].id > ids[j - 1].id;
            }
            if (!sorted) qsort(ids, m, sizeof *ids, cmp_pair);
            for (size_t j = 1; j < m; j++)
                if (ids[j].id == ids[j - 1].id)
                    TRY(fail(c, TS_ERR_INVALID_MODEL, "tree %lld: node id %lld appears twice",
                             (long long)a.treeids[tree_start], (long long)ids[j].id));
            for (size_t j = tree_start; j < i; j++) {
                xnode *x = &e->x[j];
                int md = mode_of(c, a.modes[j]);
                char t[64];
                if (md < 0 || md == M_MEMBER)
                    TRY(fail(c, TS_ERR_UNSUPPORTED, "tree %lld node %lld: mode %s is not supported",
                             (long long)a.treeids[j], (long long)a.nodeids[j], text(c, a.modes[j], t, sizeof t)));
                x->mode = (uint8_t)md;
                x->mtrue = a.n_mt ? a.mtrue[j] == 1 : 0;
                if (md == M_LEAF) continue;
                x->thr = as_type(c, a.values[j]);
                if (x->thr != x->thr)
                    TRY(fail(c, TS_ERR_INVALID_MODEL, "tree %lld node %lld: NaN threshold", (long long)a.treeids[j],
                             (long long)a.nodeids[j]));
                if (a.featureids[j] < 0 || a.featureids[j] >= (int64_t)TSM_MAX_FEATURES)
                    TRY(fail(c, TS_ERR_INVALID_MODEL, "tree %lld node %lld: feature %lld out of range",
                             (long long)a.treeids[j], (long long)a.nodeids[j], (long long)a.featureids[j]));
                x->feature = (int32_t)a.featureids[j];
                if (x->feature > e->max_feature) e->max_feature = x->feature;
                for (int side = 0; side < 2; side++) {
                    int64_t id = side ? a.falsenodeids[j] : a.truenodeids[j];
                    const idpair *q = find_pair(ids, m, id);
                    if (!q)
                        TRY(fail(c, TS_ERR_INVALID_MODEL, "tree %lld node %lld: %s node %lld does not exist in the tree",
                                 (long long)a.treeids[j], (long long)a.nodeids[j], side ? "false" : "true",
                                 (long long)id));
                    if (side) x->f = (uint32_t)q->idx;
                    else x->t = (uint32_t)q->idx;
                }
            }
            e->roots[e->n_roots++] = tree_start;
        }
        tree_start = i;
    }
    v3_drop_nodes(&a);
    /* leaf weights: (treeid, nodeid) -> node index */
    node_of = a.n_w ? malloc(a.n_w * sizeof *node_of) : NULL;
    if (a.n_w && !node_of) TRY(oom(c));
    for (size_t i = 0; i < a.n_w; i++) {
        /* the tree: binary search over roots would need sorted tree ids; trees are few
         * compared with weights in practice, but keep it linear-time: a map of tree id -> root */
        node_of[i] = (size_t)-1;
    }
    {
        idpair *trees = malloc(e->n_roots * sizeof *trees);
        if (!trees) TRY(oom(c));
        for (size_t r = 0; r < e->n_roots; r++) {
            trees[r].id = a.treeids[e->roots[r]];
            trees[r].idx = r;
        }
        qsort(trees, e->n_roots, sizeof *trees, cmp_pair);
        for (size_t r = 1; r < e->n_roots && st == TS_OK; r++)
            if (trees[r].id == trees[r - 1].id)
                st = fail(c, TS_ERR_INVALID_MODEL, "the nodes of tree %lld are not contiguous in nodes_treeids",
                          (long long)trees[r].id);
        for (size_t i = 0; i < a.n_w && st == TS_OK; i++) {
            const idpair *t = find_pair(trees, e->n_roots, a.w_treeids[i]);
            const idpair *q = NULL;
            if (t) {
                size_t r = t->idx, s0 = e->roots[r], s1 = r + 1 < e->n_roots ? e->roots[r + 1] : a.n;
                q = find_pair(a.ids + s0, s1 - s0, a.w_nodeids[i]);
            }
            if (!q)
                st = fail(c, TS_ERR_INVALID_MODEL, "%s weight %zu names tree %lld node %lld, which does not exist", pre, i,
                          (long long)a.w_treeids[i], (long long)a.w_nodeids[i]);
            else if (e->x[q->idx].mode != M_LEAF)
                st = fail(c, TS_ERR_INVALID_MODEL, "%s weight %zu names tree %lld node %lld, which is not a LEAF", pre, i,
                          (long long)a.w_treeids[i], (long long)a.w_nodeids[i]);
            else node_of[i] = q->idx;
        }
        free(trees);
        if (st != TS_OK) goto done;
    }
    TRY(set_weights(c, node_of, a.w_ids, a.weights, a.n_w));
    /* ONNX Runtime (1.32) sums a leaf's weights for several targets or classes, but with
     * one it takes the leaf's first weight only (the spec sums): refused */
    if (K == 1)
        for (size_t j = 0; j < e->n_x; j++)
            if (e->w_off[j + 1] - e->w_off[j] > 1)
                TRY(fail(c, TS_ERR_UNSUPPORTED, "tree %lld node %lld: a leaf with %zu weights for the one %s (ONNX "
                         "Runtime takes the first, the spec sums them): not supported", (long long)a.treeids[j],
                         (long long)a.nodeids[j], e->w_off[j + 1] - e->w_off[j], classifier ? "class" : "target"));
    /* outputs and base values */
    e->binary = 0;
    int used1 = 0, all_pos = 1;
    for (size_t i = 0; i < a.n_w; i++) {
        used1 |= a.w_ids[i] == 1;
        all_pos &= a.weights[i] >= 0;
    }
    uint32_t cols = (uint32_t)K;
    if (classifier && K == 2 && !used1) {
        if (a.n_base == 2)
            TRY(fail(c, TS_ERR_UNSUPPORTED, "a two-class classifier with weights for class 0 only and two base_values "
                     "(ONNX Runtime scores it as two columns of base values): not supported"));
        cols = 1;
        e->binary = all_pos ? 2 : 1;
    } else if (classifier && K == 2 && a.n_base == 2) {
        TRY(fail(c, TS_ERR_UNSUPPORTED, "a two-class classifier with class 1 weights and two base_values (ONNX Runtime "
                 "then writes -(score + base[1]) and score + base[1]): not supported"));
    }
    e->K = cols;
    e->base = calloc(cols, sizeof *e->base);
    if (!e->base) TRY(oom(c));
    if (a.n_base == cols || (a.n_base == 1 && classifier && K == 2)) {
        for (size_t k = 0; k < a.n_base; k++) e->base[k] = as_type(c, a.base[k]);
    } else if (a.n_base) {
        TRY(fail(c, TS_ERR_INVALID_MODEL, "%zu base_values for %u outputs", a.n_base, cols));
    }
    if (cols == 1)
        for (size_t i = 0; i < a.n_w; i++) e->w_tgt[i] = 0; /* only class 0: the one column */
    TRY(check_untouched(c, classifier, K));
done:
#undef TRY
    free(node_of);
    v3_free(&a);
    return st;
}

static ts_status read_v5(ox *c, const gnode *n) {
    ens *e = &c->e;
    ts_status st = TS_OK;
    int p, dt;
    int64_t *fe = NULL, *tn = NULL, *fn = NULL, *tl = NULL, *fl = NULL, *mt = NULL, *roots = NULL, *lt = NULL;
    double *splits = NULL, *modes = NULL, *lw = NULL, *mem = NULL;
    size_t nfe, ntn, nfn, ntl, nfl, nmt, nr, nlt, ns, nm, nlw, nmem;
    size_t *node_of = NULL;
#define TRY(x) do { if ((st = (x)) != TS_OK) goto done; } while (0)
    TRY(attr_list(c, n, "nodes_featureids", 8, TSPB_S_VARINT, &fe, NULL, &nfe, &p));
    TRY(attr_list(c, n, "nodes_truenodeids", 8, TSPB_S_VARINT, &tn, NULL, &ntn, &p));
    TRY(attr_list(c, n, "nodes_falsenodeids", 8, TSPB_S_VARINT, &fn, NULL, &nfn, &p));
    TRY(attr_list(c, n, "nodes_trueleafs", 8, TSPB_S_VARINT, &tl, NULL, &ntl, &p));
    TRY(attr_list(c, n, "nodes_falseleafs", 8, TSPB_S_VARINT, &fl, NULL, &nfl, &p));
    TRY(attr_list(c, n, "nodes_missing_value_tracks_true", 8, TSPB_S_VARINT, &mt, NULL, &nmt, &p));
    TRY(attr_list(c, n, "tree_roots", 8, TSPB_S_VARINT, &roots, NULL, &nr, &p));
    TRY(attr_list(c, n, "leaf_targetids", 8, TSPB_S_VARINT, &lt, NULL, &nlt, &p));
    /* splits, weights and members have the input's type (the spec; ONNX Runtime refuses
     * any other): read another way, a double split would meet float rows */
#define SAME_TYPE(name)                                                                                          \
    if (p && dt != c->x_type)                                                                                   \
        TRY(fail(c, TS_ERR_INVALID_MODEL, "TreeEnsemble: %s has element type %d, not the input's %d (the spec "   \
                 "requires the input's type)", name, dt, c->x_type))
    TRY(attr_tensor(c, n, "nodes_splits", &splits, &ns, &dt, &p));
    SAME_TYPE("nodes_splits");
    TRY(attr_tensor(c, n, "nodes_modes", &modes, &nm, &dt, &p));
    TRY(attr_tensor(c, n, "leaf_weights", &lw, &nlw, &dt, &p));
    SAME_TYPE("leaf_weights");
    TRY(attr_tensor(c, n, "membership_values", &mem, &nmem, &dt, &p));
    SAME_TYPE("membership_values");
#undef SAME_TYPE
    size_t N = nfe;
    if (N == 0 || nr == 0) TRY(fail(c, TS_ERR_INVALID_MODEL, "TreeEnsemble without nodes or tree_roots"));
    if (ntn != N || nfn != N || ntl != N || nfl != N || ns != N || nm != N || (nmt && nmt != N))
        TRY(fail(c, TS_ERR_INVALID_MODEL, "TreeEnsemble: the nodes_* attributes differ in length (featureids %zu, "
                 "truenodeids %zu, falsenodeids %zu, trueleafs %zu, falseleafs %zu, splits %zu, modes %zu)",
                 N, ntn, nfn, ntl, nfl, ns, nm));
    if (nlt != nlw || nlt == 0)
        TRY(fail(c, TS_ERR_INVALID_MODEL, "TreeEnsemble: %zu leaf_targetids and %zu leaf_weights", nlt, nlw));
    int64_t K = 0, agg = 1, post = 0;
    TRY(attr_int(c, n, "n_targets", &K, &p));
    if (!p) TRY(fail(c, TS_ERR_INVALID_MODEL, "TreeEnsemble without n_targets"));
    if (K < 1 || K > (int64_t)TSM_MAX_OUTPUTS)
        TRY(fail(c, TS_ERR_LIMIT, "%lld targets (1 to %u are supported)", (long long)K, TSM_MAX_OUTPUTS));
    TRY(attr_int(c, n, "aggregate_function", &agg, &p));
    if (agg == 0) e->agg = AGG_AVERAGE;
    else if (agg == 1) e->agg = AGG_SUM;
    else
        TRY(fail(c, TS_ERR_UNSUPPORTED, "aggregate_function %s is not supported (SUM and AVERAGE are)",
                 agg == 2 ? "MIN" : agg == 3 ? "MAX" : "(unknown)"));
    TRY(attr_int(c, n, "post_transform", &post, &p));
    if (post < 0 || post > 4) TRY(fail(c, TS_ERR_UNSUPPORTED, "post_transform %lld is unknown", (long long)post));
    /* The spec numbers them NONE 0, SOFTMAX 1, LOGISTIC 2, SOFTMAX_ZERO 3, PROBIT 4;
     * ONNX Runtime (1.32) casts the integer to its own POST_EVAL_TRANSFORM enum, where 1 is
     * LOGISTIC and 2 SOFTMAX, and so applies the other one. The raw scores do not depend
     * on it; the recorded name is what ONNX Runtime applies. */
    static const int ort_post[] = {0, 2, 1, 3, 4};
    e->post = ort_post[post];
    e->K = (uint32_t)K;
    e->base = calloc((size_t)K, sizeof *e->base);
    /* xnodes: N internal nodes, then one per leaf */
    TRY(xnode_limit(c, N + nlt));
    TRY(xnode_limit(c, nmem));
    e->n_x = N + nlt;
    e->x = calloc(e->n_x, sizeof *e->x);
    e->roots = malloc(nr * sizeof *e->roots);
    node_of = malloc(nlt * sizeof *node_of);
    e->members = nmem ? malloc(nmem * sizeof *e->members) : NULL;
    if (!e->base || !e->x || !e->roots || !node_of || (nmem && !e->members)) TRY(oom(c));
    size_t mpos = 0;
    for (size_t i = 0; i < N; i++) {
        xnode *x = &e->x[i];
        double md = modes[i];
        if (!(md >= 0 && md <= 6) || md != floor(md))
            TRY(fail(c, TS_ERR_UNSUPPORTED, "TreeEnsemble node %zu: mode %g is not supported", i, md));
        x->mode = (uint8_t)md;
        x->mtrue = nmt ? mt[i] == 1 : 0;
        if (fe[i] < 0 || fe[i] >= (int64_t)TSM_MAX_FEATURES)
            TRY(fail(c, TS_ERR_INVALID_MODEL, "TreeEnsemble node %zu: feature %lld out of range", i, (long long)fe[i]));
        x->feature = (int32_t)fe[i];
        if (x->feature > e->max_feature) e->max_feature = x->feature;
        if (x->mode == M_MEMBER) {
            /* the members of the MEMBER nodes, in node order, each list ended by NaN */
            x->mem_off = e->n_members;
            while (mpos < nmem && mem[mpos] == mem[mpos]) e->members[e->n_members++] = as_type(c, mem[mpos++]);
            if (mpos >= nmem)
                TRY(fail(c, TS_ERR_INVALID_MODEL, "TreeEnsemble node %zu: membership_values has no NaN-ended list for "
                         "this BRANCH_MEMBER node", i));
            mpos++;
            x->mem_n = e->n_members - x->mem_off;
        } else {
            x->thr = as_type(c, splits[i]);
            if (x->thr != x->thr) TRY(fail(c, TS_ERR_INVALID_MODEL, "TreeEnsemble node %zu: NaN split", i));
        }
        for (int side = 0; side < 2; side++) {
            int64_t id = side ? fn[i] : tn[i];
            int leaf = (side ? fl[i] : tl[i]) != 0;
            int64_t lim = leaf ? (int64_t)nlt : (int64_t)N;
            if (id < 0 || id >= lim)
                TRY(fail(c, TS_ERR_INVALID_MODEL, "TreeEnsemble node %zu: %s %s %lld out of range (%lld)", i,
                         side ? "false" : "true", leaf ? "leaf" : "node", (long long)id, (long long)lim));
            int64_t xi = leaf ? (int64_t)N + id : id;
            if (side) x->f = (uint32_t)xi;
            else x->t = (uint32_t)xi;
        }
    }
    for (size_t l = 0; l < nlt; l++) {
        e->x[N + l].mode = M_LEAF;
        node_of[l] = N + l;
        if (lt[l] < 0 || lt[l] >= K)
            TRY(fail(c, TS_ERR_INVALID_MODEL, "TreeEnsemble leaf %zu: target %lld outside 0 .. %lld", l, (long long)lt[l],
                     (long long)K - 1));
    }
    for (size_t r = 0; r < nr; r++) {
        int64_t i = roots[r];
        if (i < 0 || i >= (int64_t)N)
            TRY(fail(c, TS_ERR_INVALID_MODEL, "TreeEnsemble: tree_roots[%zu] = %lld out of range", r, (long long)i));
        if (tl[i] && fl[i] && tn[i] == fn[i]) e->roots[e->n_roots++] = N + (size_t)tn[i]; /* a one-leaf tree */
        else e->roots[e->n_roots++] = (size_t)i;
    }
    TRY(set_weights(c, node_of, lt, lw, nlt));
done:
#undef TRY
    free(fe); free(tn); free(fn); free(tl); free(fl); free(mt); free(roots); free(lt);
    free(splits); free(modes); free(lw); free(mem); free(node_of);
    return st;
}

/* ---- building ---------------------------------------------------------------------------- */

typedef struct emitter {
    int64_t *cl, *cr, *feat, *cset; /* cset: a TS_CMP_IN node's set (sets below), else -1 */
    double *thr, *vals;
    uint8_t *cmp, *ml;
    size_t n, cap;
    uint32_t nv;
    struct task { size_t x, parent; int side; } *stack;
    size_t sp, scap;
    /* the tree's category sets: set i holds mem[mem_at[i], mem_at[i + 1]); then as the
     * builder takes them, n_sets * words bitset words (emit_sets) */
    uint32_t *mem, *words;
    size_t *mem_at;
    size_t n_mem, mem_cap, n_sets, sets_cap;
    uint32_t set_words;
} emitter;

static void emitter_free(emitter *m) {
    free(m->cl); free(m->cr); free(m->feat); free(m->cset); free(m->thr); free(m->vals);
    free(m->cmp); free(m->ml); free(m->stack); free(m->mem); free(m->words); free(m->mem_at);
}

static int grow(void **p, size_t n, size_t size) {
    void *q = realloc(*p, n * size);
    if (!q) return 0;
    *p = q;
    return 1;
}

/* A new builder node linked from (parent, side); its index, or (size_t)-1 out of memory. */
static size_t new_node(emitter *m, size_t parent, int side, int cmp, double thr, int64_t feat, int mleft) {
    if (m->n == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 64;
        if (!grow((void **)&m->cl, cap, sizeof *m->cl) || !grow((void **)&m->cr, cap, sizeof *m->cr) ||
            !grow((void **)&m->feat, cap, sizeof *m->feat) || !grow((void **)&m->thr, cap, sizeof *m->thr) ||
            !grow((void **)&m->cmp, cap, sizeof *m->cmp) || !grow((void **)&m->ml, cap, sizeof *m->ml) ||
            !grow((void **)&m->cset, cap, sizeof *m->cset) || !grow((void **)&m->vals, cap * m->nv, sizeof *m->vals))
            return (size_t)-1;
        m->cap = cap;
    }
    size_t b = m->n++;
    m->cl[b] = m->cr[b] = -1;
    m->cset[b] = -1;
    m->feat[b] = feat;
    m->thr[b] = thr;
    m->cmp[b] = (uint8_t)cmp;
    m->ml[b] = (uint8_t)mleft;
    for (uint32_t k = 0; k < m->nv; k++) m->vals[b * m->nv + k] = 0.0;
    if (parent != (size_t)-1) (side ? m->cr : m->cl)[parent] = (int64_t)b;
    return b;
}

static int push(emitter *m, size_t x, size_t parent, int side) {
    if (m->sp == m->scap) {
        size_t cap = m->scap ? 2 * m->scap : 64;
        if (!grow((void **)&m->stack, cap, sizeof *m->stack)) return 0;
        m->scap = cap;
    }
    m->stack[m->sp].x = x;
    m->stack[m->sp].parent = parent;
    m->stack[m->sp].side = side;
    m->sp++;
    return 1;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Members a category set can hold exactly: integers in [0, 65536) (a set of 2,048 words
 * at most, per node that uses it). */
#define SET_MEMBER_MAX 65536.0

/* Whether the u sorted members are all set members (SET_MEMBER_MAX). */
static int members_fit_set(const double *v, size_t u) {
    for (size_t i = 0; i < u; i++)
        if (!(v[i] >= 0.0 && v[i] < SET_MEMBER_MAX && v[i] == (double)(uint32_t)v[i])) return 0;
    return 1;
}

/* A new category set of the u members v (members_fit_set) for node a; 0 out of memory. */
static int add_set(emitter *m, size_t a, const double *v, size_t u) {
    if (m->n_sets + 2 > m->sets_cap) {
        size_t cap = m->sets_cap ? 2 * m->sets_cap : 16;
        if (!grow((void **)&m->mem_at, cap, sizeof *m->mem_at)) return 0;
        m->sets_cap = cap;
    }
    if (m->n_mem + u > m->mem_cap) {
        size_t cap = m->mem_cap ? 2 * m->mem_cap : 64;
        while (cap < m->n_mem + u) cap *= 2;
        if (!grow((void **)&m->mem, cap, sizeof *m->mem)) return 0;
        m->mem_cap = cap;
    }
    if (m->n_sets == 0) m->mem_at[0] = 0;
    for (size_t i = 0; i < u; i++) m->mem[m->n_mem++] = (uint32_t)v[i];
    m->cset[a] = (int64_t)m->n_sets++;
    m->mem_at[m->n_sets] = m->n_mem;
    return 1;
}

/* The tree's sets as bitsets of one width (the builder's category_words); 0 out of memory. */
static int emit_sets(emitter *m) {
    uint32_t top = 0;
    for (size_t i = 0; i < m->n_mem; i++) top = m->mem[i] > top ? m->mem[i] : top;
    m->set_words = top / 32 + 1;
    free(m->words);
    m->words = m->n_sets ? calloc(m->n_sets * m->set_words, sizeof *m->words) : NULL;
    if (m->n_sets && !m->words) return 0;
    for (size_t s = 0; s < m->n_sets; s++)
        for (size_t i = m->mem_at[s]; i < m->mem_at[s + 1]; i++)
            m->words[s * m->set_words + m->mem[i] / 32] |= 1u << (m->mem[i] % 32);
    return 1;
}

/* The builder arrays of tree r (one output `out`, or all K when m->nv == K). */
static ts_status emit_tree(ox *c, emitter *m, size_t tree, size_t root, int64_t out, size_t *budget) {
    ens *e = &c->e;
    m->n = 0;
    m->sp = 0;
    m->n_sets = m->n_mem = 0;
    if (!push(m, root, (size_t)-1, 0)) return oom(c);
    double *sorted = NULL;
    while (m->sp) {
        struct task t = m->stack[--m->sp];
        const xnode *x = &e->x[t.x];
        if (m->n + 4 + 2 * x->mem_n > *budget || m->n + 4 + 2 * x->mem_n > 2 * (size_t)TSM_MAX_LEAVES - 1) {
            free(sorted);
            return fail(c, TS_ERR_LIMIT, "tree %zu: the forest grows past its limit of builder nodes (8 per node of the "
                        "file plus 2^20, at most 2^26) when BRANCH_EQ, BRANCH_NEQ and BRANCH_MEMBER tests are expanded "
                        "into comparisons (their subtrees are copied)", tree);
        }
        size_t P = t.parent;
        int S = t.side;
        int mt = x->mtrue;
        size_t a, b;
#define NEW(cmp, thr, ml) new_node(m, P, S, (cmp), (thr), x->feature, (ml))
        switch (x->mode) {
        case M_LEAF:
            if ((a = new_node(m, P, S, 0, 0.0, 0, 0)) == (size_t)-1) goto nomem;
            for (size_t w = e->w_off[t.x]; w < e->w_off[t.x + 1]; w++) {
                if (m->nv == 1) {
                    if (e->w_tgt[w] == out) m->vals[a] += e->w_val[w];
                } else {
                    m->vals[a * m->nv + (size_t)e->w_tgt[w]] += e->w_val[w];
                }
            }
            break;
        case M_LEQ: case M_LT: case M_GTE: case M_GT: {
            static const int cmps[] = {TS_CMP_LE, TS_CMP_LT, TS_CMP_GE, TS_CMP_GT};
            if ((a = NEW(cmps[x->mode], x->thr, mt)) == (size_t)-1) goto nomem;
            if (!push(m, (size_t)x->f, a, 1) || !push(m, (size_t)x->t, a, 0)) goto nomem;
            break;
        }
        case M_EQ: /* x <= t ? (x < t ? F : T) : F; NaN: tracks true -> A's left, B's right (T) */
            if ((a = NEW(TS_CMP_LE, x->thr, mt)) == (size_t)-1) goto nomem;
            if ((b = new_node(m, a, 0, TS_CMP_LT, x->thr, x->feature, 0)) == (size_t)-1) goto nomem;
            if (!push(m, (size_t)x->f, a, 1) || !push(m, (size_t)x->f, b, 0) || !push(m, (size_t)x->t, b, 1))
                goto nomem;
            break;
        case M_NEQ: /* x <= t ? (x < t ? T : F) : T; NaN -> A's right (T) */
            if ((a = NEW(TS_CMP_LE, x->thr, 0)) == (size_t)-1) goto nomem;
            if ((b = new_node(m, a, 0, TS_CMP_LT, x->thr, x->feature, 0)) == (size_t)-1) goto nomem;
            if (!push(m, (size_t)x->t, a, 1) || !push(m, (size_t)x->t, b, 0) || !push(m, (size_t)x->f, b, 1))
                goto nomem;
            break;
        case M_MEMBER: {
            size_t k = x->mem_n, u = 0;
            free(sorted);
            sorted = k ? malloc(k * sizeof *sorted) : NULL;
            if (k && !sorted) goto nomem;
            if (k) memcpy(sorted, e->members + x->mem_off, k * sizeof *sorted);
            if (k) qsort(sorted, k, sizeof *sorted, cmp_double);
            for (size_t i = 0; i < k; i++)
                if (u == 0 || sorted[i] != sorted[u - 1]) sorted[u++] = sorted[i];
            if (u == 0) { /* an empty set: false, NaN true only when it tracks true */
                if ((a = NEW(TS_CMP_LE, INFINITY, 0)) == (size_t)-1) goto nomem;
                if (!push(m, (size_t)x->f, a, 0) || !push(m, (size_t)(mt ? x->t : x->f), a, 1)) goto nomem;
                break;
            }
            if (!mt && members_fit_set(sorted, u)) { /* one set node: members left; NaN, others right */
                if ((a = NEW(TS_CMP_IN, 0.0, 0)) == (size_t)-1 || !add_set(m, a, sorted, u)) goto nomem;
                if (!push(m, (size_t)x->f, a, 1) || !push(m, (size_t)x->t, a, 0)) goto nomem;
                break;
            }
            for (size_t i = 0; i < u; i++) {
                /* N: x < v ? F : M;  M: x <= v ? T : next. NaN enters N only (tracks true:
                 * N right, M left = T; else N left = F). */
                if ((a = new_node(m, P, S, TS_CMP_LT, sorted[i], x->feature, i == 0 ? !mt : 0)) == (size_t)-1) goto nomem;
                if ((b = new_node(m, a, 1, TS_CMP_LE, sorted[i], x->feature, 1)) == (size_t)-1) goto nomem;
                if (!push(m, (size_t)x->f, a, 0) || !push(m, (size_t)x->t, b, 0)) goto nomem;
                P = b;
                S = 1;
            }
            if (!push(m, (size_t)x->f, P, 1)) goto nomem;
            break;
        }
        }
#undef NEW
    }
    free(sorted);
    if (!emit_sets(m)) return oom(c);
    *budget -= m->n;
    return TS_OK;
nomem:
    free(sorted);
    return oom(c);
}

/* Whether EQ node b continues the EQ chain of node a (fold_eq_chains): the same feature,
 * true subtree and missing rule, and a's false edge its only reference (indeg). */
static int eq_link(const ens *e, const xnode *a, int64_t b, const uint32_t *indeg) {
    if (b < 0 || (size_t)b >= e->n_x) return 0;
    const xnode *y = &e->x[b];
    return y->mode == M_EQ && y->feature == a->feature && y->t == a->t && y->mtrue == a->mtrue && indeg[b] == 1;
}

/* Chains of EQ nodes on one feature whose true edges name one subtree (onnxmltools writes
 * a LightGBM categorical split so: x == 1 ? T : (x == 5 ? T : (x == 7 ? T : F))) into one
 * MEMBER node (x in {1, 5, 7} ? T : F): the same test for every x, NaN included (each link
 * sends it the same way). A link is folded only where it is reached by its parent's false
 * edge alone, so no other path changes; the links become unreachable. */
static ts_status fold_eq_chains(ox *c) {
    ens *e = &c->e;
    uint32_t *indeg = calloc(e->n_x + 1, sizeof *indeg);
    uint8_t *cont = calloc(e->n_x + 1, 1);
    ts_status st = TS_OK;
    if (!indeg || !cont) {
        st = oom(c);
        goto done;
    }
    for (size_t r = 0; r < e->n_roots; r++) indeg[e->roots[r]]++;
    for (size_t i = 0; i < e->n_x; i++)
        if (e->x[i].mode != M_LEAF)
            for (int side = 0; side < 2; side++) {
                int64_t ch = side ? e->x[i].f : e->x[i].t;
                if (ch >= 0 && (size_t)ch < e->n_x && indeg[ch] < UINT32_MAX) indeg[ch]++;
            }
    size_t extra = 0;
    for (size_t i = 0; i < e->n_x; i++)
        if (e->x[i].mode == M_EQ && eq_link(e, &e->x[i], e->x[i].f, indeg)) cont[e->x[i].f] = 1, extra++;
    if (extra == 0) goto done;
    if ((st = xnode_limit(c, e->n_members + 2 * extra)) != TS_OK) goto done;
    double *mem = realloc(e->members, (e->n_members + 2 * extra) * sizeof *mem);
    if (!mem) {
        st = oom(c);
        goto done;
    }
    e->members = mem;
    for (size_t i = 0; i < e->n_x; i++) {
        xnode *h = &e->x[i];
        if (h->mode != M_EQ || cont[i] || !eq_link(e, h, h->f, indeg)) continue;
        size_t off = e->n_members, steps = 0;
        e->members[e->n_members++] = h->thr;
        int64_t y = h->f;
        while (eq_link(e, h, y, indeg) && steps++ < e->n_x) {
            e->members[e->n_members++] = e->x[y].thr;
            y = e->x[y].f;
        }
        h->mode = M_MEMBER;
        h->mem_off = off;
        h->mem_n = e->n_members - off;
        h->f = y;
    }
done:
    free(indeg);
    free(cont);
    return st;
}

/* Every xnode reached from the roots at most once (a forest of trees, no cycle). */
static ts_status check_forest(ox *c) {
    ens *e = &c->e;
    uint8_t *seen = calloc(e->n_x, 1);
    size_t *stack = malloc((e->n_x + 1) * sizeof *stack);
    ts_status st = TS_OK;
    if (!seen || !stack) st = oom(c);
    for (size_t r = 0; st == TS_OK && r < e->n_roots; r++) {
        size_t sp = 0;
        if (seen[e->roots[r]] && e->x[e->roots[r]].mode != M_LEAF) {
            st = fail(c, TS_ERR_INVALID_MODEL, "tree %zu: its root is reached twice (shared with another tree)", r);
            break;
        }
        seen[e->roots[r]] = 1;
        stack[sp++] = e->roots[r];
        while (sp && st == TS_OK) {
            const xnode *x = &e->x[stack[--sp]];
            if (x->mode == M_LEAF) continue;
            for (int side = 1; side >= 0; side--) { /* the true child popped first (nodes in file order) */
                size_t ch = (size_t)(side ? x->f : x->t);
                if (e->x[ch].mode == M_LEAF) continue; /* a leaf is values: two parents may name it */
                if (seen[ch]) {
                    st = fail(c, TS_ERR_INVALID_MODEL, "tree %zu: a node is reached twice (a cycle or a shared subtree)",
                              r);
                    break;
                }
                seen[ch] = 1;
                stack[sp++] = ch;
            }
        }
    }
    free(seen);
    free(stack);
    return st;
}

/* ONNX Runtime sums float input's scores in float32: where |base| + the sum of every
 * |weight| of an output can pass FLT_MAX (less a margin for float32 rounding), a row may
 * come out inf there and finite in treescore's double sum. Refused (no real model comes
 * near). */
static ts_status check_float_sum(ox *c) {
    const ens *e = &c->e;
    if (c->x_type != 1) return TS_OK;
    for (uint32_t k = 0; k < e->K; k++) {
        double bound = fabs(e->base[k]);
        for (size_t w = 0; w < e->w_off[e->n_x]; w++)
            if (e->w_tgt[w] == (int64_t)k || e->K == 1) bound += fabs(e->w_val[w]);
        if (bound > 0.999 * FLT_MAX)
            return fail(c, TS_ERR_UNSUPPORTED, "output %u: its base value and leaf weights add up to %.6g in magnitude, "
                        "past float32's range: ONNX Runtime sums float input in float32 and can reach inf where "
                        "treescore's double sum does not; not supported", k, bound);
    }
    return TS_OK;
}

static ts_status build(ox *c, ts_model **out) {
    ens *e = &c->e;
    ts_status st;
    TS_TRY(fold_eq_chains(c));
    TS_TRY(check_forest(c));
    TS_TRY(check_float_sum(c));
    int64_t nf = e->max_feature + 1;
    if (c->in_width > 0) {
        if (e->max_feature >= c->in_width)
            return fail(c, TS_ERR_INVALID_MODEL, "a node tests feature %lld, but the input has %lld columns",
                        (long long)e->max_feature, (long long)c->in_width);
        nf = c->in_width;
    }
    if (nf > (int64_t)TSM_MAX_FEATURES)
        return fail(c, TS_ERR_LIMIT, "%lld features (at most %u)", (long long)nf, TSM_MAX_FEATURES);
    if (e->n_roots > TSM_MAX_TREES) return fail(c, TS_ERR_LIMIT, "%zu trees (at most %u)", e->n_roots, TSM_MAX_TREES);
    for (uint32_t k = 0; k < e->K; k++)
        if (!isfinite(e->base[k])) return fail(c, TS_ERR_INVALID_MODEL, "base value %u is not finite", k);
    if (e->agg == AGG_AVERAGE)
        for (uint32_t k = 0; k < e->K; k++)
            if (e->base[k] != 0)
                return fail(c, TS_ERR_UNSUPPORTED, "aggregate_function AVERAGE with a nonzero base value (ONNX Runtime "
                            "adds it after the division): not supported");
    ts_model_builder *b = NULL;
    TS_TRY(ts_model_builder_create((uint32_t)nf, e->K, &b, c->err));
    emitter m = {0};
    /* the copies of EQ/NEQ/MEMBER subtrees may grow a small file into a large forest: at
     * most 8 builder nodes per node of the file, plus 2^20, and never above 2^26 */
    size_t budget = e->n_x < (MAX_EXPANDED - (1u << 20)) / 8 ? 8 * e->n_x + (1u << 20) : MAX_EXPANDED;
    st = ts_model_builder_set_base_scores(b, e->base, e->K, c->err);
    if (st == TS_OK && e->agg == AGG_AVERAGE) st = ts_model_builder_set_aggregation(b, TS_AGG_MEAN, c->err);
    if (st != TS_OK) st = tsio_locate(c->err, st, c->name, 0, 0);
    for (size_t r = 0; st == TS_OK && r < e->n_roots; r++) {
        /* one output per tree when every weight it holds goes to one output (boosted
         * multiclass); all K otherwise, and always for AVERAGE (each output divides by
         * the number of trees) */
        int64_t target = -1;
        int single = e->K == 1 || e->agg != AGG_AVERAGE;
        if (single) {
            if (!push(&m, e->roots[r], 0, 0)) { st = oom(c); break; }
            while (m.sp && single) {
                const xnode *x = &e->x[m.stack[--m.sp].x];
                if (x->mode != M_LEAF) {
                    /* (true child popped first: in a file numbered depth first, as the
                     * converters number, the walk reads the nodes in order) */
                    if (!push(&m, (size_t)x->f, 0, 0) || !push(&m, (size_t)x->t, 0, 0)) { st = oom(c); break; }
                    continue;
                }
                size_t xi = (size_t)(x - e->x);
                for (size_t w = e->w_off[xi]; w < e->w_off[xi + 1]; w++) {
                    if (target < 0) target = e->w_tgt[w];
                    else if (e->w_tgt[w] != target) single = 0;
                }
            }
            m.sp = 0;
            if (st != TS_OK) break;
        }
        uint32_t nv = single ? 1 : e->K;
        if (m.nv != nv) {
            /* the value array is sized by cap * nv: start over */
            emitter_free(&m);
            memset(&m, 0, sizeof m);
        }
        m.nv = nv;
        st = emit_tree(c, &m, r, e->roots[r], target < 0 ? 0 : target, &budget);
        if (st != TS_OK) break;
        ts_tree_arrays t;
        ts_tree_arrays_init(&t);
        t.n_nodes = (uint32_t)m.n;
        t.children_left = m.cl;
        t.children_right = m.cr;
        t.feature = m.feat;
        t.threshold = m.thr;
        t.compares = m.cmp;
        t.missing_left = m.ml;
        t.values = m.vals;
        t.n_values = nv;
        t.output = nv == 1 ? (uint32_t)(target < 0 ? 0 : target) : 0;
        /* the builder's float32 input rounds x to float, then compares with the double
         * threshold: a double tree whose x went through float32 */
        t.input = c->x_type == 11 && !c->x_f32 ? TS_INPUT_FLOAT64 : TS_INPUT_FLOAT32;
        if (m.n_sets) {
            t.category_set = m.cset;
            t.category_words = m.words;
            t.n_category_sets = (uint32_t)m.n_sets;
            t.category_set_words = m.set_words;
        }
        st = ts_model_builder_add_tree(b, &t, c->err);
        if (st != TS_OK) st = tsio_locate(c->err, st, c->name, 0, 0);
    }
    emitter_free(&m);
    ts_model *model = NULL;
    if (st == TS_OK) {
        st = ts_model_builder_finish(b, &model, c->err);
        if (st != TS_OK) st = tsio_locate(c->err, st, c->name, 0, 0);
    }
    ts_model_builder_free(b);
    if (st != TS_OK) return st;
    model->format = TS_FORMAT_ONNX;
    snprintf(model->objective, sizeof model->objective, "onnx post_transform=%s%s", POST_NAMES[e->post],
             e->binary == 2 ? " binary_positive" : e->binary == 1 ? " binary" : "");
    *out = model;
    return TS_OK;
}

/* ---- the graph walk ---------------------------------------------------------------------- */

static int is_op(const ox *c, const gnode *n, const char *op) { return span_is(c, n->op, op); }

static int is_ml(const ox *c, const gnode *n) { return span_is(c, n->domain, "ai.onnx.ml"); }

/* A constant tensor: all its values, as doubles. */
static ts_status const_values(ox *c, const value *v, double **vals, size_t *n) {
    int dt;
    return tensor_values(c, v->t, "constant", vals, n, &dt);
}

/* 1 when a graph output is the tree's scores (or a ZipMap of them) computed without the
 * graph's Add: an Add whose result only feeds a dead branch or a second output must not be
 * folded into the scores the graph returns. */
static int outputs_skip_add(ox *c) {
    tspb_msg it = c->graph;
    tspb_field f = {0};
    while (tspb_next(&it, &f) > 0) {
        if (f.num != 12 || f.wire != TSPB_LEN) continue;
        span nm = {0, 0};
        int et;
        int64_t w;
        if (value_info(c, tspb_sub(&it, &f), &nm, &et, &w) < 0) continue;
        const value *v = find_value(c, nm);
        if (v && (v->kind == K_SCORE || v->kind == K_OTHER) && !v->added) return 1;
    }
    return 0;
}

static ts_status walk(ox *c, ts_model **out) {
    span ins[4], outs[8];
    size_t n_in, n_out;
    int have_tree = 0, have_add = 0;
    ts_status st = TS_OK;
    for (size_t i = 0; i < c->n_nodes && st == TS_OK; i++) {
        const gnode *n = &c->nodes[i];
        TS_TRY(node_names(c, n, 1, ins, 4, &n_in));
        TS_TRY(node_names(c, n, 2, outs, 8, &n_out));
        if (n_in > 4 || n_out > 8) return refuse_node(c, n, i, "too many inputs or outputs");
        value *a = n_in > 0 ? find_value(c, ins[0]) : NULL;
        value *b = n_in > 1 ? find_value(c, ins[1]) : NULL;
        int ka = a ? a->kind : K_NONE, kb = b ? b->kind : K_NONE;
        int added = a ? a->added : 0; /* read now: add_value moves the values */
        size_t vals0 = c->n_vals;
        tspb_msg none = {c->buf, 0, 0};
        int tree_op = is_ml(c, n) && (is_op(c, n, "TreeEnsembleRegressor") || is_op(c, n, "TreeEnsembleClassifier") ||
                                      is_op(c, n, "TreeEnsemble"));
        if (tree_op) {
            if (have_tree) return refuse_node(c, n, i, "a second tree-ensemble node");
            if (ka != K_X || n_in != 1) return refuse_node(c, n, i, "its input is not the graph's input (through Cast or Identity)");
            have_tree = 1;
            c->x_type = a->dtype;
            c->x_f32 = a->f32;
            if (is_op(c, n, "TreeEnsemble")) {
                if (c->opset_ml < 5) c->opset_ml = 5;
                st = read_v5(c, n);
            } else {
                st = read_v3(c, n, is_op(c, n, "TreeEnsembleClassifier"));
            }
            if (st != TS_OK) return st;
            if (is_op(c, n, "TreeEnsembleClassifier")) {
                if (n_out > 0) TS_TRY(add_value(c, outs[0], K_LABEL, 0, none));
                if (n_out > 1) TS_TRY(add_value(c, outs[1], K_SCORE, 0, none));
            } else if (n_out > 0) {
                TS_TRY(add_value(c, outs[0], K_SCORE, 0, none));
            }
            continue;
        }
        if (n->domain.len && !is_ml(c, n) && !span_is(c, n->domain, "ai.onnx"))
            return refuse_node(c, n, i, "an operator of another domain");
        if (is_op(c, n, "Identity") || is_op(c, n, "Reshape") || is_op(c, n, "Flatten") || is_op(c, n, "Squeeze") ||
            is_op(c, n, "Unsqueeze")) {
            if (!is_op(c, n, "Identity") && ka == K_X) return refuse_node(c, n, i, "a reshape of the input");
            if (ka == K_NONE || n_out != 1) return refuse_node(c, n, i, "its input is not understood");
            int f32 = a->f32;
            TS_TRY(add_value(c, outs[0], ka, a->dtype, a->t));
            c->vals[c->n_vals - 1].f32 = f32;
        } else if (is_op(c, n, "Cast")) {
            int64_t to = 0;
            int p;
            TS_TRY(attr_int(c, n, "to", &to, &p));
            if (ka == K_NONE || n_out != 1 || !p) return refuse_node(c, n, i, "its input is not understood");
            if (ka == K_X) {
                if (to != 1 && to != 11) return refuse_node(c, n, i, "a cast of the input to a type other than float or double");
                /* double -> float rounds as the scorer's double rows are rounded; float ->
                 * double is exact, so a float that is cast to double (a float graph input,
                 * double -> float -> double) is float input to double thresholds */
                int f32 = a->f32 || to == 1;
                TS_TRY(add_value(c, outs[0], K_X, (int)to, a->t));
                c->vals[c->n_vals - 1].f32 = f32;
            } else if (ka == K_SCORE) {
                if (to != 1 && to != 11) return refuse_node(c, n, i, "a cast of the scores to a type other than float or double");
                TS_TRY(add_value(c, outs[0], K_SCORE, 0, a->t));
            } else {
                TS_TRY(add_value(c, outs[0], ka, a->dtype, a->t));
            }
        } else if (is_op(c, n, "ZipMap") && is_ml(c, n)) {
            if (ka != K_SCORE) return refuse_node(c, n, i, "its input is not the scores");
            if (n_out) TS_TRY(add_value(c, outs[0], K_OTHER, 0, a->t));
        } else if (is_op(c, n, "Constant")) {
            tspb_msg am;
            int r = attr(c, n, "value", &am);
            tspb_field f = {0};
            if (r <= 0 || scalar(am, 5, TSPB_LEN, &f) <= 0 || n_out != 1)
                return refuse_node(c, n, i, "a constant other than a tensor 'value'");
            TS_TRY(add_value(c, outs[0], K_CONST, 0, tspb_sub(&am, &f)));
        } else if ((is_op(c, n, "Add") || is_op(c, n, "Mul")) && n_in == 2 && n_out == 1 &&
                   ((ka == K_SCORE && kb == K_CONST) || (ka == K_CONST && kb == K_SCORE))) {
            const value *k = ka == K_CONST ? a : b;
            added = (ka == K_CONST ? b : a)->added;
            double *v = NULL;
            size_t nv = 0;
            TS_TRY(const_values(c, k, &v, &nv));
            if (is_op(c, n, "Mul")) {
                int ones = nv > 0;
                for (size_t j = 0; j < nv; j++) ones &= v[j] == 1.0;
                free(v);
                if (!ones) return refuse_node(c, n, i, "a multiplication of the scores by a constant other than 1");
            } else {
                if (have_add) {
                    free(v);
                    return refuse_node(c, n, i, "a second Add to the scores");
                }
                have_add = 1;
                c->add = v;
                c->n_add = nv;
            }
            TS_TRY(add_value(c, outs[0], K_SCORE, 0, k->t));
            if (is_op(c, n, "Add")) added = 1;
        } else {
            return refuse_node(c, n, i, "not understood");
        }
        for (size_t j = vals0; j < c->n_vals; j++) c->vals[j].added = added;
    }
    if (!have_tree) {
        return fail(c, TS_ERR_UNSUPPORTED, "the graph has no TreeEnsembleRegressor, TreeEnsembleClassifier or "
                    "TreeEnsemble node (domain ai.onnx.ml)");
    }
    if (have_add) {
        ens *e = &c->e;
        if (e->agg == AGG_AVERAGE) st = fail(c, TS_ERR_UNSUPPORTED, "an Add to the scores of an AVERAGE ensemble");
        else if (e->post != 0)
            st = fail(c, TS_ERR_UNSUPPORTED, "an Add to the scores after post_transform %s (ONNX Runtime adds to "
                      "the transformed scores; treescore's raw scores are those before the transform)",
                      POST_NAMES[e->post]);
        else if (outputs_skip_add(c))
            st = fail(c, TS_ERR_UNSUPPORTED, "a graph output holds the scores without the Add of a constant that "
                      "another node applies (which scores are meant is ambiguous)");
        else if (e->binary)
            st = fail(c, TS_ERR_UNSUPPORTED, "an Add to the scores of a two-class classifier scored as one column "
                      "(ONNX Runtime adds it to both columns it writes, [1 - s, s] or [-s, s], which no one score "
                      "gives)");
        else if (c->n_add != 1 && c->n_add != e->K)
            st = fail(c, TS_ERR_UNSUPPORTED, "an Add of %zu values to %u scores", c->n_add, e->K);
        else
            for (uint32_t k = 0; k < e->K; k++) e->base[k] += as_type(c, c->add[c->n_add == 1 ? 0 : k]);
        if (st != TS_OK) return st;
    }
    return build(c, out);
}

/* ---- the model ---------------------------------------------------------------------------- */

static ts_status read_graph(ox *c) {
    tspb_msg it = c->graph;
    tspb_field f = {0};
    int r;
    size_t n_nodes = 0;
    while ((r = tspb_next(&it, &f)) > 0)
        if (f.num == 1 && f.wire == TSPB_LEN) n_nodes++;
    if (r < 0) return malformed(c, "graph");
    if (n_nodes > MAX_GRAPH_NODES)
        return fail(c, TS_ERR_UNSUPPORTED, "a graph of %zu nodes (at most %d: a tree ensemble and its converter's nodes)",
                    n_nodes, MAX_GRAPH_NODES);
    c->nodes = n_nodes ? calloc(n_nodes, sizeof *c->nodes) : NULL;
    if (n_nodes && !c->nodes) return oom(c);
    tspb_msg none = {c->buf, 0, 0};
    /* initializers first: constants of any name */
    it = c->graph;
    while (tspb_next(&it, &f) > 0) {
        if (f.num == 5 && f.wire == TSPB_LEN) {
            tspb_msg t = tspb_sub(&it, &f);
            tspb_field nm = {0};
            int q = scalar(t, 8, TSPB_LEN, &nm);
            if (q < 0) return malformed(c, "initializer");
            if (q > 0) TS_TRY(add_value(c, field_span(&nm), K_CONST, 0, t));
        }
    }
    /* inputs: the one that is not an initializer */
    it = c->graph;
    int n_x = 0;
    while (tspb_next(&it, &f) > 0) {
        if (f.num != 11 || f.wire != TSPB_LEN) continue;
        span nm = {0, 0};
        int et;
        int64_t w;
        if (value_info(c, tspb_sub(&it, &f), &nm, &et, &w) < 0) return malformed(c, "graph input");
        value *v = find_value(c, nm);
        if (v && v->kind == K_CONST) continue;
        if (n_x++) return fail(c, TS_ERR_UNSUPPORTED, "the graph has more than one input (a tree ensemble reads one)");
        if (et != 1 && et != 11)
            return fail(c, TS_ERR_UNSUPPORTED, "the graph's input has element type %d (float, 1, and double, 11, are "
                        "supported)", et);
        c->in_dtype = et;
        c->in_width = w;
        TS_TRY(add_value(c, nm, K_X, et, none));
        c->vals[c->n_vals - 1].f32 = et == 1;
    }
    if (n_x == 0) return fail(c, TS_ERR_INVALID_MODEL, "the graph has no input");
    it = c->graph;
    size_t k = 0;
    while (tspb_next(&it, &f) > 0) {
        if (f.num != 1 || f.wire != TSPB_LEN) continue;
        gnode *n = &c->nodes[k++];
        n->msg = tspb_sub(&it, &f);
        tspb_msg nm = n->msg;
        tspb_field g = {0};
        while ((r = tspb_next(&nm, &g)) > 0) {
            if (g.wire != TSPB_LEN) continue;
            if (g.num == 3) n->name = field_span(&g);
            else if (g.num == 4) n->op = field_span(&g);
            else if (g.num == 7) n->domain = field_span(&g);
        }
        if (r < 0) return malformed(c, "node");
    }
    c->n_nodes = k;
    return TS_OK;
}

static void ctx_free(ox *c) {
    ens *e = &c->e;
    free(e->x); free(e->roots); free(e->w_off); free(e->w_tgt); free(e->w_val); free(e->members); free(e->base);
    free(c->nodes);
    free(c->vals);
    free(c->add);
}

ts_status tsio_load_onnx(const char *data, size_t size, const char *name, ts_model **out, ts_error *err) {
    *out = NULL;
    ox c = {0};
    c.buf = (const uint8_t *)data;
    c.size = size;
    c.name = name;
    c.err = err;
    c.in_width = -1;
    tspb_msg m = tspb_open(c.buf, size);
    tspb_field f = {0};
    int r, graphs = 0;
    c.opset_ml = -1;
    while ((r = tspb_next(&m, &f)) > 0) {
        if (f.num == 7 && f.wire == TSPB_LEN) {
            c.graph = tspb_sub(&m, &f);
            graphs++;
        } else if (f.num == 8 && f.wire == TSPB_LEN) {
            tspb_msg o = tspb_sub(&m, &f);
            tspb_field d = {0}, v = {0};
            int qd = scalar(o, 1, TSPB_LEN, &d), qv = scalar(o, 2, TSPB_VARINT, &v);
            if (qd < 0 || qv < 0) return malformed(&c, "opset_import");
            if (qd > 0 && span_is(&c, field_span(&d), "ai.onnx.ml") && qv > 0) c.opset_ml = (int64_t)v.v;
        }
    }
    if (r < 0) return malformed(&c, "ModelProto");
    if (graphs != 1)
        return fail(&c, TS_ERR_INVALID_MODEL, "%s", graphs ? "the model has two graphs" : "the model has no graph");
    ts_status st = read_graph(&c);
    if (st == TS_OK) st = walk(&c, out);
    ctx_free(&c);
    if (st != TS_OK && *out) {
        ts_model_free(*out);
        *out = NULL;
    }
    return st;
}

int tsio_is_onnx(const char *data, size_t size) {
    if (!data || size < 4 || (uint8_t)data[0] != 0x08) return 0;
    tspb_msg m = tspb_open((const uint8_t *)data, size);
    tspb_field f = {0};
    int r, first = 1, graph = 0;
    while ((r = tspb_next(&m, &f)) > 0) {
        if (first && (f.num != 1 || f.wire != TSPB_VARINT || f.v == 0 || f.v > 1000)) return 0;
        first = 0;
        if (f.num == 7 && f.wire == TSPB_LEN) graph = 1;
    }
    return r == 0 && graph;
}
