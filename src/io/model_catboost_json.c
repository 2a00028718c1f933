/* model_catboost_json.c: loader for CatBoost's JSON model (save_model(format="json")), read into CatBoost's model arrays as CatBoost's own JSON import does. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "io/catboost_core.h"
#include "io/json.h"
#include "io/limits.h"
#include "io/loaders.h"
#include "io/text.h"
#include "model/forest.h"

/*
 * Input (catboost/libs/model/model_export/json_model_helpers.cpp, CatBoost 1.x):
 *   {"features_info": {"float_features": [{"borders": [...], "feature_id": "",
 *        "feature_index": 0, "flat_feature_index": 0, "has_nans": false,
 *        "nan_value_treatment": "AsIs"|"AsFalse"|"AsTrue", "feature_name"?: ""}, ...],
 *        "categorical_features"?, "ctrs"?, ...},
 *    "model_info": {..., "params": {"loss_function": {"type": "RMSE", ...}, ...}},
 *    "oblivious_trees": [{"leaf_values": [...], "leaf_weights": [...],
 *        "splits": [{"border": b, "float_feature_index": f, "split_index": s,
 *                    "split_type": "FloatFeature"}, ...]}, ...]
 *    | "trees": [NODE, ...],
 *    "scale_and_bias": [scale, [bias, ...]]}
 *   NODE = {"split": {... as above}, "left": NODE, "right": NODE}
 *        | {"value": v | [v, ...], "weight": w}
 *
 * CatBoost's JSON import (ConvertJsonToCatboostModel) rebuilds its arrays from this:
 * the float features from features_info, each split by its "split_index" (an index into
 * the borders of all float features, in feature order: the border and feature written
 * beside it are not read back), leaf values as they come; non-symmetric trees become
 * step nodes numbered in preorder (a leaf is a node with both diffs 0), the dimension
 * from the leaf value count. This loader does the same, and also checks that each
 * split's "float_feature_index" and "border", when present, name the very border its
 * split_index does (a file whose two disagree is refused rather than read one way).
 * What the arrays mean: catboost_core.h.
 * Categorical features: "categorical_features" [{"feature_index", "flat_feature_index",
 * "feature_id", "values"?: one-hot hashes}], "ctrs" [{"borders", "ctr_type", "elements",
 * "identifier", priors, "scale", "shift", "target_border_idx"}] and "ctr_data"
 * {identifier: {"counter_denominator", "hash_map": [key, value, ...], "hash_stride"}};
 * splits "OneHotFeature" and "OnlineCtr" by their split_index as well (catboost_core.c,
 * "Categorical features"). Text and embedding features are refused by name. Recursion over NODEs is
 * bounded by the JSON parser's nesting limit (TSJ_MAX_DEPTH).
 */

typedef struct cj_ctx {
    tsj_parser p;
    const char *name;
    ts_error *err;
    tscb_model cb;
    size_t cap_floats, cap_sizes, cap_splits, cap_steps, cap_leaves, cap_cats, cap_ctrs, cap_tables;
    /* per split: the float feature and border it says it is (-1: not said) */
    int32_t *said_feature;
    float *said_border;
    size_t cap_said;
    int has_trees, has_features, dim_known;
    size_t trees_byte;
} cj_ctx;

static ts_status oom(cj_ctx *c) { return tsj_fail(&c->p, TS_ERR_NO_MEMORY, "out of memory"); }

static ts_status grow(cj_ctx *c, void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return TS_OK;
    size_t n = *cap ? *cap : 16;
    while (n < need) n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q) return oom(c);
    *p = q;
    *cap = n;
    return TS_OK;
}

static ts_status read_int(cj_ctx *c, const char *key, long long lo, long long hi, long long *out) {
    return tsj_read_int(&c->p, key, lo, hi, out);
}

static ts_status read_double(cj_ctx *c, const char *key, double *out) {
    const char *tok;
    size_t n, at = tsj_offset(&c->p);
    TS_TRY(tsj_number(&c->p, &tok, &n));
    if (tsio_parse_double(tok, n, out) == 0) return TS_OK;
    char ex[64];
    tsio_excerpt(ex, sizeof ex, tok, n);
    return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "bad \"%s\" %s", key, ex);
}

/* CatBoost reads a float from JSON as FromJson<float>: the double, then cast to float. */
static ts_status read_float(cj_ctx *c, const char *key, float *out) {
    double d;
    TS_TRY(read_double(c, key, &d));
    *out = (float)d;
    return TS_OK;
}

/* ---- features_info ------------------------------------------------------------------ */

static ts_status read_float_feature(cj_ctx *c) {
    char key[TSJ_KEY_MAX];
    int has;
    size_t at = tsj_offset(&c->p);
    if (c->cb.n_floats >= TSM_MAX_FEATURES)
        return tsj_fail(&c->p, TS_ERR_LIMIT, "more than %u float features", TSM_MAX_FEATURES);
    TS_TRY(grow(c, (void **)&c->cb.floats, &c->cap_floats, c->cb.n_floats + 1, sizeof *c->cb.floats));
    tscb_float *f = &c->cb.floats[c->cb.n_floats++];
    memset(f, 0, sizeof *f);
    f->index = f->flat_index = -1;
    int has_flat = 0;
    size_t cap_borders = 0;
    char name[256] = "", id[256] = "";
    TS_TRY(tsj_object_begin(&c->p));
    while (tsj_object_next(&c->p, key, &has) == TS_OK && has) {
        long long v;
        if (!strcmp(key, "borders")) {
            int more;
            TS_TRY(tsj_array_begin(&c->p));
            while (tsj_array_next(&c->p, &more) == TS_OK && more) {
                if (f->n_borders >= UINT32_MAX / 2) return tsj_fail(&c->p, TS_ERR_LIMIT, "too many borders");
                TS_TRY(grow(c, (void **)&f->borders, &cap_borders, (size_t)f->n_borders + 1, sizeof *f->borders));
                TS_TRY(read_float(c, "borders", &f->borders[f->n_borders]));
                f->n_borders++;
            }
            TS_TRY(c->p.status);
        } else if (!strcmp(key, "feature_index")) {
            TS_TRY(read_int(c, key, 0, TSM_MAX_FEATURES - 1, &v));
            f->index = (int32_t)v;
        } else if (!strcmp(key, "flat_feature_index")) {
            TS_TRY(read_int(c, key, 0, TSM_MAX_FEATURES - 1, &v));
            f->flat_index = (int32_t)v;
            has_flat = 1;
        } else if (!strcmp(key, "has_nans")) {
            TS_TRY(tsj_bool(&c->p, 1, &f->has_nans));
        } else if (!strcmp(key, "nan_value_treatment")) {
            char s[16];
            size_t sat = tsj_offset(&c->p);
            TS_TRY(tsj_string(&c->p, s, sizeof s));
            f->nan_treatment = !strcmp(s, "AsIs") ? TSCB_NAN_AS_IS : !strcmp(s, "AsFalse") ? TSCB_NAN_AS_FALSE
                               : !strcmp(s, "AsTrue")                                   ? TSCB_NAN_AS_TRUE
                                                                                        : -1;
            if (f->nan_treatment < 0)
                return tsj_fail_at(&c->p, TS_ERR_PARSE, sat,
                                   "bad \"nan_value_treatment\" (expected \"AsIs\", \"AsFalse\" or \"AsTrue\")");
        } else if (!strcmp(key, "feature_id") || !strcmp(key, "feature_name")) {
            int truncated;
            char *dst = key[8] == 'i' ? id : name;
            TS_TRY(tsj_string_prefix(&c->p, dst, 256, &truncated));
            if (truncated) dst[0] = '\0';
        } else {
            TS_TRY(tsj_skip(&c->p));
        }
    }
    TS_TRY(c->p.status);
    if (!has_flat)
        return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "float feature %u has no \"flat_feature_index\"",
                           c->cb.n_floats - 1);
    const char *nm = name[0] ? name : id;
    if (nm[0]) {
        f->name = malloc(strlen(nm) + 1);
        if (!f->name) return oom(c);
        strcpy(f->name, nm);
    }
    return TS_OK;
}

/* A categorical feature: {"feature_id", "feature_index", "flat_feature_index", "values"?:
 * [hash, ...]} (values: its one-hot values, CatBoost's int32 view of the hashes). */
static ts_status read_cat_feature(cj_ctx *c) {
    char key[TSJ_KEY_MAX];
    int has, more;
    size_t at = tsj_offset(&c->p);
    if (c->cb.n_cats >= TSM_MAX_FEATURES)
        return tsj_fail(&c->p, TS_ERR_LIMIT, "more than %u categorical features", TSM_MAX_FEATURES);
    TS_TRY(grow(c, (void **)&c->cb.cats, &c->cap_cats, c->cb.n_cats + 1, sizeof *c->cb.cats));
    tscb_cat *f = &c->cb.cats[c->cb.n_cats++];
    memset(f, 0, sizeof *f);
    f->index = f->flat_index = -1;
    size_t cap = 0;
    char id[256] = "";
    TS_TRY(tsj_object_begin(&c->p));
    while (tsj_object_next(&c->p, key, &has) == TS_OK && has) {
        long long v;
        if (!strcmp(key, "feature_index")) {
            TS_TRY(read_int(c, key, 0, TSM_MAX_FEATURES - 1, &v));
            f->index = (int32_t)v;
        } else if (!strcmp(key, "flat_feature_index")) {
            TS_TRY(read_int(c, key, 0, TSM_MAX_FEATURES - 1, &v));
            f->flat_index = (int32_t)v;
        } else if (!strcmp(key, "values")) {
            TS_TRY(tsj_array_begin(&c->p));
            while (tsj_array_next(&c->p, &more) == TS_OK && more) {
                if (f->n_onehot >= TSM_MAX_LEAVES) return tsj_fail(&c->p, TS_ERR_LIMIT, "too many one-hot values");
                TS_TRY(grow(c, (void **)&f->onehot, &cap, (size_t)f->n_onehot + 1, sizeof *f->onehot));
                TS_TRY(read_int(c, "values", INT32_MIN, UINT32_MAX, &v));
                f->onehot[f->n_onehot++] = (uint32_t)v;
            }
            TS_TRY(c->p.status);
        } else if (!strcmp(key, "feature_id") || !strcmp(key, "feature_name")) {
            int truncated;
            if (id[0] && key[8] == 'i') {
                TS_TRY(tsj_skip(&c->p));
                continue;
            }
            TS_TRY(tsj_string_prefix(&c->p, id, sizeof id, &truncated));
            if (truncated) id[0] = '\0';
        } else {
            TS_TRY(tsj_skip(&c->p));
        }
    }
    TS_TRY(c->p.status);
    if (f->flat_index < 0 || f->index != (int32_t)(c->cb.n_cats - 1))
        return tsj_fail_at(&c->p, TS_ERR_PARSE, at,
                           "categorical feature %u: no \"flat_feature_index\", or its \"feature_index\" %d is not its "
                           "position", c->cb.n_cats - 1, (int)f->index);
    if (id[0]) {
        f->name = malloc(strlen(id) + 1);
        if (!f->name) return oom(c);
        strcpy(f->name, id);
    }
    return TS_OK;
}

#define CJ_ID_MAX 4096


static int ctr_type_of(const char *s) {
    static const char *names[] = {"Borders", "Buckets", "BinarizedTargetMeanValue", "FloatTargetMeanValue", "Counter",
                                  "FeatureFreq"};
    for (int i = 0; i < 6; i++)
        if (!strcmp(s, names[i])) return i;
    return -1;
}

/* Largest number of elements of one CTR projection accepted. */
#define CJ_MAX_ELEMS 64

/* One projection element: {"cat_feature_index": i, "combination_element":
 * "cat_feature_value"} (the category's hash), {"float_feature_index": f, "border": b,
 * "combination_element": "float_feature"} (x > b) or {"cat_feature_index": i, "value": h,
 * "combination_element": "cat_feature_exact_value"} (the hash equals h). */
static ts_status read_ctr_element(cj_ctx *c, tscb_elem *e) {
    char key[TSJ_KEY_MAX], kind[64] = "";
    int has, truncated, has_border = 0, has_value = 0;
    long long cf = -1, ff = -1, value = 0;
    size_t at = tsj_offset(&c->p);
    memset(e, 0, sizeof *e);
    TS_TRY(tsj_object_begin(&c->p));
    while (tsj_object_next(&c->p, key, &has) == TS_OK && has) {
        if (!strcmp(key, "cat_feature_index")) {
            TS_TRY(read_int(c, key, 0, TSM_MAX_FEATURES - 1, &cf));
        } else if (!strcmp(key, "float_feature_index")) {
            TS_TRY(read_int(c, key, 0, TSM_MAX_FEATURES - 1, &ff));
        } else if (!strcmp(key, "border")) {
            TS_TRY(read_float(c, key, &e->border));
            has_border = 1;
        } else if (!strcmp(key, "value")) {
            TS_TRY(read_int(c, key, INT32_MIN, UINT32_MAX, &value));
            has_value = 1;
        } else if (!strcmp(key, "combination_element")) {
            TS_TRY(tsj_string_prefix(&c->p, kind, sizeof kind, &truncated));
            for (char *q = kind; *q; q++)
                if ((unsigned char)*q < 0x20 || *q == 0x7f || *q == '\'') *q = '?';
        } else {
            TS_TRY(tsj_skip(&c->p));
        }
    }
    TS_TRY(c->p.status);
    if (!strcmp(kind, "cat_feature_value") && cf >= 0) {
        e->kind = TSCB_ELEM_CAT;
        e->feature = (int32_t)cf;
    } else if (!strcmp(kind, "float_feature") && ff >= 0 && has_border) {
        e->kind = TSCB_ELEM_FLOAT;
        e->feature = (int32_t)ff;
        if (e->border != e->border) return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "a CTR element's border is NaN");
    } else if (!strcmp(kind, "cat_feature_exact_value") && cf >= 0 && has_value) {
        e->kind = TSCB_ELEM_ONEHOT;
        e->feature = (int32_t)cf;
        e->value = (uint32_t)value;
    } else {
        return tsj_fail_at(&c->p, TS_ERR_UNSUPPORTED, at,
                           "a CTR element of kind '%s' (or without its feature, border or value) is not supported",
                           kind);
    }
    return TS_OK;
}

/* A "ctrs" entry: {"borders", "ctr_type", "elements", "identifier", "prior_denomerator",
 * "prior_numerator", "scale", "shift", "target_border_idx"}. */
static ts_status read_ctr(cj_ctx *c) {
    char key[TSJ_KEY_MAX], *ident = NULL;
    int has, more;
    size_t at = tsj_offset(&c->p);
    if (c->cb.n_ctrs >= TSM_MAX_FEATURES) return tsj_fail(&c->p, TS_ERR_LIMIT, "more than %u CTRs", TSM_MAX_FEATURES);
    TS_TRY(grow(c, (void **)&c->cb.ctrs, &c->cap_ctrs, c->cb.n_ctrs + 1, sizeof *c->cb.ctrs));
    tscb_ctr *r = &c->cb.ctrs[c->cb.n_ctrs++];
    memset(r, 0, sizeof *r);
    r->type = -1;
    r->cat = -1;
    r->prior_denom = 1.0f;
    r->scale = 1.0f;
    size_t cap = 0, cap_elems = 0;
    TS_TRY(tsj_object_begin(&c->p));
    while (tsj_object_next(&c->p, key, &has) == TS_OK && has) {
        long long v;
        if (!strcmp(key, "borders")) {
            TS_TRY(tsj_array_begin(&c->p));
            while (tsj_array_next(&c->p, &more) == TS_OK && more) {
                if (r->n_borders >= UINT32_MAX / 2) return tsj_fail(&c->p, TS_ERR_LIMIT, "too many borders");
                TS_TRY(grow(c, (void **)&r->borders, &cap, (size_t)r->n_borders + 1, sizeof *r->borders));
                TS_TRY(read_float(c, "borders", &r->borders[r->n_borders]));
                r->n_borders++;
            }
            TS_TRY(c->p.status);
        } else if (!strcmp(key, "ctr_type")) {
            char s[64];
            int truncated;
            size_t sat = tsj_offset(&c->p);
            TS_TRY(tsj_string_prefix(&c->p, s, sizeof s, &truncated));
            r->type = truncated ? -1 : ctr_type_of(s);
            if (r->type < 0) {
                for (char *q = s; *q; q++)
                    if ((unsigned char)*q < 0x20 || *q == 0x7f) *q = '?';
                return tsj_fail_at(&c->p, TS_ERR_UNSUPPORTED, sat, "CTR type \"%s\" is not supported", s);
            }
        } else if (!strcmp(key, "elements")) {
            TS_TRY(tsj_array_begin(&c->p));
            while (tsj_array_next(&c->p, &more) == TS_OK && more) {
                if (r->n_elems >= CJ_MAX_ELEMS)
                    return tsj_fail(&c->p, TS_ERR_LIMIT, "a CTR over more than %d elements", CJ_MAX_ELEMS);
                TS_TRY(grow(c, (void **)&r->elems, &cap_elems, (size_t)r->n_elems + 1, sizeof *r->elems));
                TS_TRY(read_ctr_element(c, &r->elems[r->n_elems]));
                r->n_elems++;
            }
            TS_TRY(c->p.status);
        } else if (!strcmp(key, "identifier")) {
            if (!ident && !(ident = malloc(CJ_ID_MAX))) return oom(c);
            ts_status st = tsj_string(&c->p, ident, CJ_ID_MAX);
            if (st != TS_OK) {
                free(ident);
                return st;
            }
            free(r->table_id);
            r->table_id = ident;
            ident = NULL;
        } else if (!strcmp(key, "prior_numerator")) {
            TS_TRY(read_float(c, key, &r->prior_num));
        } else if (!strcmp(key, "prior_denomerator") || !strcmp(key, "prior_denominator")) {
            TS_TRY(read_float(c, key, &r->prior_denom));
        } else if (!strcmp(key, "scale")) {
            TS_TRY(read_float(c, key, &r->scale));
        } else if (!strcmp(key, "shift")) {
            TS_TRY(read_float(c, key, &r->shift));
        } else if (!strcmp(key, "target_border_idx")) {
            TS_TRY(read_int(c, key, 0, 65535, &v));
            r->target_border_idx = (uint32_t)v;
        } else {
            TS_TRY(tsj_skip(&c->p));
        }
    }
    TS_TRY(c->p.status);
    if (r->type < 0 || r->n_elems == 0 || !r->table_id)
        return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "CTR %u: no \"ctr_type\", \"elements\" or \"identifier\"",
                           c->cb.n_ctrs - 1);
    tscb_elems_order(r->elems, r->n_elems);
    if (r->n_elems == 1 && r->elems[0].kind == TSCB_ELEM_CAT) r->cat = r->elems[0].feature;
    return TS_OK;
}

/* "ctr_data": {identifier: {"counter_denominator", "hash_map": [key, v, ..., key, v, ...],
 * "hash_stride": 1 + values per row}, ...}. Keys are longer than the parser's key buffer:
 * each is decoded from its text in the input. */
static ts_status read_ctr_table(cj_ctx *c, tscb_ctr_table *t) {
    char key[TSJ_KEY_MAX];
    int has, more;
    size_t at = tsj_offset(&c->p), hash_at = 0;
    long long v;
    int has_map = 0;
    tsj_parser saved;
    TS_TRY(tsj_object_begin(&c->p));
    while (tsj_object_next(&c->p, key, &has) == TS_OK && has) {
        if (!strcmp(key, "counter_denominator")) {
            TS_TRY(read_int(c, key, 0, INT32_MAX, &t->counter_denominator));
        } else if (!strcmp(key, "hash_stride")) {
            TS_TRY(read_int(c, key, 2, 65536, &v));
            t->stride = (uint32_t)v;
        } else if (!strcmp(key, "hash_map")) {
            saved = c->p; /* read once the stride is known */
            hash_at = tsj_offset(&c->p);
            has_map = 1;
            TS_TRY(tsj_skip(&c->p));
        } else {
            TS_TRY(tsj_skip(&c->p));
        }
    }
    TS_TRY(c->p.status);
    if (!has_map || t->stride == 0)
        return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "a ctr_data table without \"hash_map\" or \"hash_stride\"");
    tsj_parser end = c->p;
    c->p = saved;
    size_t cap_keys = 0, cap_vals = 0, col = 0, n_vals = 0;
    TS_TRY(tsj_array_begin(&c->p));
    while (tsj_array_next(&c->p, &more) == TS_OK && more) {
        if (col == 0) {
            char s[32];
            tsj_type ty;
            size_t kat = tsj_offset(&c->p);
            TS_TRY(tsj_peek(&c->p, &ty));
            if (ty == TSJ_STRING) {
                TS_TRY(tsj_string(&c->p, s, sizeof s));
            } else {
                const char *tok;
                size_t n;
                TS_TRY(tsj_number(&c->p, &tok, &n));
                if (n >= sizeof s) n = sizeof s - 1;
                memcpy(s, tok, n);
                s[n] = '\0';
            }
            char *e;
            errno = 0;
            unsigned long long k = strtoull(s, &e, 10);
            if (!s[0] || *e || s[0] == '-' || errno == ERANGE)
                return tsj_fail_at(&c->p, TS_ERR_PARSE, kat, "a ctr_data key is not an unsigned 64-bit integer");
            if (t->n_rows >= ((size_t)1 << 32)) return tsj_fail(&c->p, TS_ERR_LIMIT, "a ctr_data table too large");
            TS_TRY(grow(c, (void **)&t->keys, &cap_keys, t->n_rows + 1, sizeof *t->keys));
            t->keys[t->n_rows++] = (uint64_t)k;
        } else {
            TS_TRY(grow(c, (void **)&t->values, &cap_vals, n_vals + 1, sizeof *t->values));
            TS_TRY(read_double(c, "hash_map", &t->values[n_vals++]));
        }
        col = (col + 1) % t->stride;
    }
    TS_TRY(c->p.status);
    if (col != 0)
        return tsj_fail_at(&c->p, TS_ERR_PARSE, hash_at, "a ctr_data \"hash_map\" of %zu rows is cut short (stride %u)",
                           t->n_rows, t->stride);
    for (size_t i = 0; i < n_vals; i++)
        if (!(t->values[i] >= -1e30 && t->values[i] <= 1e30))
            return tsj_fail_at(&c->p, TS_ERR_PARSE, hash_at, "a ctr_data value is not finite");
    c->p = end;
    return TS_OK;
}

static ts_status read_ctr_data(cj_ctx *c) {
    char key[TSJ_KEY_MAX];
    int has;
    TS_TRY(tsj_object_begin(&c->p));
    for (;;) {
        size_t kat = tsj_offset(&c->p);
        TS_TRY(tsj_object_next(&c->p, key, &has));
        if (!has) break;
        size_t vat = tsj_offset(&c->p);
        const char *q = memchr(c->p.data + kat, '"', vat - kat);
        if (!q) return tsj_fail_at(&c->p, TS_ERR_PARSE, kat, "a ctr_data key");
        tsj_parser kp;
        tsj_init(&kp, q, (size_t)(c->p.data + vat - q), 0, c->name, NULL);
        char *id = malloc(CJ_ID_MAX);
        if (!id) return oom(c);
        if (tsj_string(&kp, id, CJ_ID_MAX) != TS_OK) {
            free(id);
            return tsj_fail_at(&c->p, TS_ERR_LIMIT, kat, "a ctr_data key longer than %d bytes", CJ_ID_MAX - 1);
        }
        if (c->cb.n_tables >= TSM_MAX_FEATURES) {
            free(id);
            return tsj_fail(&c->p, TS_ERR_LIMIT, "too many ctr_data tables");
        }
        ts_status st = grow(c, (void **)&c->cb.tables, &c->cap_tables, c->cb.n_tables + 1, sizeof *c->cb.tables);
        if (st != TS_OK) {
            free(id);
            return st;
        }
        tscb_ctr_table *t = &c->cb.tables[c->cb.n_tables++];
        memset(t, 0, sizeof *t);
        t->id = id;
        TS_TRY(read_ctr_table(c, t));
    }
    return c->p.status;
}

/* A features_info entry of a kind the IR cannot score: refused, naming its first feature. */
static ts_status refuse_features(cj_ctx *c, const char *kind) {
    size_t at = tsj_offset(&c->p);
    char key[TSJ_KEY_MAX], id[64] = "";
    int has, more;
    long long flat = -1, index = -1;
    size_t count = 0;
    tsj_type t;
    TS_TRY(tsj_peek(&c->p, &t));
    if (t != TSJ_ARRAY) return tsj_skip(&c->p);
    TS_TRY(tsj_array_begin(&c->p));
    while (tsj_array_next(&c->p, &more) == TS_OK && more) {
        if (count++ > 0) {
            TS_TRY(tsj_skip(&c->p));
            continue;
        }
        TS_TRY(tsj_peek(&c->p, &t));
        if (t != TSJ_OBJECT) {
            TS_TRY(tsj_skip(&c->p));
            continue;
        }
        TS_TRY(tsj_object_begin(&c->p));
        while (tsj_object_next(&c->p, key, &has) == TS_OK && has) {
            if (!strcmp(key, "flat_feature_index") && tsj_peek(&c->p, &t) == TS_OK && t == TSJ_NUMBER)
                TS_TRY(read_int(c, key, -1, TSM_MAX_FEATURES, &flat));
            else if (!strcmp(key, "feature_index") && tsj_peek(&c->p, &t) == TS_OK && t == TSJ_NUMBER)
                TS_TRY(read_int(c, key, -1, TSM_MAX_FEATURES, &index));
            else if ((!strcmp(key, "feature_id") || !strcmp(key, "feature_name")) && tsj_peek(&c->p, &t) == TS_OK &&
                     t == TSJ_STRING && !id[0]) {
                int truncated;
                TS_TRY(tsj_string_prefix(&c->p, id, sizeof id, &truncated));
                for (char *s = id; *s; s++)
                    if ((unsigned char)*s < 0x20 || *s == 0x7f || *s == '\'') *s = '?';
            } else
                TS_TRY(tsj_skip(&c->p));
        }
        TS_TRY(c->p.status);
    }
    TS_TRY(c->p.status);
    if (count == 0) return TS_OK;
    return tsj_fail_at(&c->p, TS_ERR_UNSUPPORTED, at,
                       "the model has %zu %s feature%s (the first: %s feature %lld, column %lld%s%s%s): only float "
                       "and categorical features are supported (text and embedding features are not)",
                       count, kind, count == 1 ? "" : "s", kind, index, flat, id[0] ? ", '" : "", id, id[0] ? "'" : "");
}

static ts_status read_features_info(cj_ctx *c) {
    char key[TSJ_KEY_MAX];
    int has, more;
    c->has_features = 1;
    TS_TRY(tsj_object_begin(&c->p));
    while (tsj_object_next(&c->p, key, &has) == TS_OK && has) {
        if (!strcmp(key, "float_features")) {
            TS_TRY(tsj_array_begin(&c->p));
            while (tsj_array_next(&c->p, &more) == TS_OK && more) TS_TRY(read_float_feature(c));
            TS_TRY(c->p.status);
        } else if (!strcmp(key, "categorical_features")) {
            TS_TRY(tsj_array_begin(&c->p));
            while (tsj_array_next(&c->p, &more) == TS_OK && more) TS_TRY(read_cat_feature(c));
            TS_TRY(c->p.status);
        } else if (!strcmp(key, "text_features")) {
            TS_TRY(refuse_features(c, "text"));
        } else if (!strcmp(key, "embedding_features")) {
            TS_TRY(refuse_features(c, "embedding"));
        } else if (!strcmp(key, "ctrs")) {
            TS_TRY(tsj_array_begin(&c->p));
            while (tsj_array_next(&c->p, &more) == TS_OK && more) TS_TRY(read_ctr(c));
            TS_TRY(c->p.status);
        } else {
            TS_TRY(tsj_skip(&c->p));
        }
    }
    return c->p.status;
}

/* ---- trees ------------------------------------------------------------------------ */

/* A "split" object: its split_index appended to TreeSplits, and what it says it is. */
static ts_status read_split(cj_ctx *c) {
    char key[TSJ_KEY_MAX];
    int has, has_index = 0;
    long long index = 0, ff = -1;
    float border = 0.0f;
    int has_border = 0;
    size_t at = tsj_offset(&c->p);
    TS_TRY(tsj_object_begin(&c->p));
    while (tsj_object_next(&c->p, key, &has) == TS_OK && has) {
        if (!strcmp(key, "split_index")) {
            has_index = 1;
            TS_TRY(read_int(c, key, 0, INT32_MAX, &index));
        } else if (!strcmp(key, "float_feature_index")) {
            TS_TRY(read_int(c, key, 0, INT32_MAX, &ff));
        } else if (!strcmp(key, "border")) {
            has_border = 1;
            TS_TRY(read_float(c, key, &border));
        } else if (!strcmp(key, "split_type")) {
            char s[32];
            int truncated;
            size_t sat = tsj_offset(&c->p);
            TS_TRY(tsj_string_prefix(&c->p, s, sizeof s, &truncated));
            if (truncated || (strcmp(s, "FloatFeature") && strcmp(s, "OneHotFeature") && strcmp(s, "OnlineCtr"))) {
                for (char *q = s; *q; q++)
                    if ((unsigned char)*q < 0x20 || *q == 0x7f) *q = '?';
                return tsj_fail_at(&c->p, TS_ERR_UNSUPPORTED, sat,
                                   "a split of type \"%s\": only float feature, one-hot and CTR splits are supported "
                                   "(text and embedding features are not)",
                                   s);
            }
        } else {
            TS_TRY(tsj_skip(&c->p));
        }
    }
    TS_TRY(c->p.status);
    if (!has_index) return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "a split without \"split_index\"");
    size_t i = c->cb.n_splits;
    TS_TRY(grow(c, (void **)&c->cb.splits, &c->cap_splits, i + 1, sizeof *c->cb.splits));
    if (c->cap_said < c->cap_splits) {
        size_t cap = c->cap_said;
        TS_TRY(grow(c, (void **)&c->said_feature, &cap, c->cap_splits, sizeof *c->said_feature));
        cap = c->cap_said;
        TS_TRY(grow(c, (void **)&c->said_border, &cap, c->cap_splits, sizeof *c->said_border));
        c->cap_said = cap;
    }
    c->cb.splits[i] = (int32_t)index;
    c->said_feature[i] = has_border ? (int32_t)ff : -1;
    c->said_border[i] = border;
    c->cb.n_splits++;
    return TS_OK;
}

static ts_status push_leaf_value(cj_ctx *c, double v) {
    TS_TRY(grow(c, (void **)&c->cb.leaves, &c->cap_leaves, c->cb.n_leaves + 1, sizeof *c->cb.leaves));
    c->cb.leaves[c->cb.n_leaves++] = v;
    return TS_OK;
}

static ts_status set_dim(cj_ctx *c, size_t at, size_t dim) {
    if (dim < 1 || dim > TSM_MAX_OUTPUTS)
        return tsj_fail_at(&c->p, dim < 1 ? TS_ERR_PARSE : TS_ERR_LIMIT, at, "%zu values per leaf (expected 1 to %u)",
                           dim, TSM_MAX_OUTPUTS);
    if (c->dim_known && c->cb.dim != dim)
        return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "%zu values per leaf here, %u elsewhere", dim, c->cb.dim);
    c->dim_known = 1;
    c->cb.dim = (uint32_t)dim;
    return TS_OK;
}

static ts_status read_oblivious_tree(cj_ctx *c) {
    char key[TSJ_KEY_MAX];
    int has, more;
    size_t at = tsj_offset(&c->p), first_split = c->cb.n_splits, first_leaf = c->cb.n_leaves;
    int has_values = 0, has_splits = 0;
    if (c->cb.n_trees >= TSM_MAX_TREES) return tsj_fail(&c->p, TS_ERR_LIMIT, "more than %u trees", TSM_MAX_TREES);
    TS_TRY(tsj_object_begin(&c->p));
    while (tsj_object_next(&c->p, key, &has) == TS_OK && has) {
        if (!strcmp(key, "leaf_values") && !has_values) {
            has_values = 1;
            TS_TRY(tsj_array_begin(&c->p));
            while (tsj_array_next(&c->p, &more) == TS_OK && more) {
                double v;
                TS_TRY(read_double(c, "leaf_values", &v));
                TS_TRY(push_leaf_value(c, v));
            }
            TS_TRY(c->p.status);
        } else if (!strcmp(key, "splits") && !has_splits) {
            tsj_type t;
            has_splits = 1;
            TS_TRY(tsj_peek(&c->p, &t));
            if (t == TSJ_NULL) { /* a tree of depth 0 (CatBoost writes null for its empty splits) */
                TS_TRY(tsj_skip(&c->p));
                continue;
            }
            TS_TRY(tsj_array_begin(&c->p));
            while (tsj_array_next(&c->p, &more) == TS_OK && more) TS_TRY(read_split(c));
            TS_TRY(c->p.status);
        } else if (!strcmp(key, "leaf_values") || !strcmp(key, "splits")) {
            return tsj_fail(&c->p, TS_ERR_PARSE, "tree %u: \"%s\" appears twice", c->cb.n_trees, key);
        } else {
            TS_TRY(tsj_skip(&c->p));
        }
    }
    TS_TRY(c->p.status);
    if (!has_values || !has_splits)
        return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "tree %u needs \"leaf_values\" and \"splits\"", c->cb.n_trees);
    size_t depth = c->cb.n_splits - first_split, n_values = c->cb.n_leaves - first_leaf;
    if (depth > TSCB_MAX_DEPTH)
        return tsj_fail_at(&c->p, TS_ERR_LIMIT, at, "tree %u: depth %zu (the limit is %d)", c->cb.n_trees, depth,
                           TSCB_MAX_DEPTH);
    size_t leaves = (size_t)1 << depth;
    if (n_values == 0 || n_values % leaves)
        return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "tree %u: %zu leaf values for %zu leaves", c->cb.n_trees, n_values,
                           leaves);
    TS_TRY(set_dim(c, at, n_values / leaves));
    TS_TRY(grow(c, (void **)&c->cb.tree_sizes, &c->cap_sizes, c->cb.n_trees + 1, sizeof *c->cb.tree_sizes));
    c->cb.tree_sizes[c->cb.n_trees++] = (int32_t)depth;
    return TS_OK;
}

/* One NODE of a non-symmetric tree, numbered in preorder as CatBoost's import does; *idx
 * receives its node index. */
static ts_status read_node(cj_ctx *c, size_t *idx) {
    char key[TSJ_KEY_MAX];
    int has, more;
    size_t at = tsj_offset(&c->p), me = c->cb.n_steps;
    if (me >= (size_t)INT32_MAX) return tsj_fail(&c->p, TS_ERR_LIMIT, "too many nodes");
    TS_TRY(grow(c, (void **)&c->cb.steps, &c->cap_steps, me + 1, 2 * sizeof *c->cb.steps));
    c->cb.steps[2 * me] = c->cb.steps[2 * me + 1] = 0;
    c->cb.n_steps++;
    /* node_leaf grows with steps (its capacity follows cap_steps) */
    uint32_t *nl = realloc(c->cb.node_leaf, c->cap_steps * sizeof *nl);
    if (!nl) return oom(c);
    c->cb.node_leaf = nl;
    c->cb.node_leaf[me] = UINT32_MAX;
    c->cb.n_node_leaf = c->cb.n_steps;
    /* the node's split: appended now (a leaf's is 0), so TreeSplits stays in node order */
    TS_TRY(grow(c, (void **)&c->cb.splits, &c->cap_splits, me + 1, sizeof *c->cb.splits));
    if (c->cap_said < c->cap_splits) {
        size_t cap = c->cap_said;
        TS_TRY(grow(c, (void **)&c->said_feature, &cap, c->cap_splits, sizeof *c->said_feature));
        cap = c->cap_said;
        TS_TRY(grow(c, (void **)&c->said_border, &cap, c->cap_splits, sizeof *c->said_border));
        c->cap_said = cap;
    }
    c->cb.splits[me] = 0;
    c->said_feature[me] = -1;
    c->cb.n_splits = me + 1;
    int has_split = 0, has_left = 0, has_right = 0, has_value = 0;
    TS_TRY(tsj_object_begin(&c->p));
    while (tsj_object_next(&c->p, key, &has) == TS_OK && has) {
        if (!strcmp(key, "split") && !has_split) {
            has_split = 1;
            /* read_split appends; move its entry to this node's slot */
            size_t n = c->cb.n_splits;
            c->cb.n_splits = me;
            TS_TRY(read_split(c));
            c->cb.n_splits = n;
        } else if ((!strcmp(key, "left") && !has_left) || (!strcmp(key, "right") && !has_right)) {
            int left = key[0] == 'l';
            *(left ? &has_left : &has_right) = 1;
            size_t child, cat = tsj_offset(&c->p);
            TS_TRY(read_node(c, &child));
            if (child - me > UINT16_MAX)
                return tsj_fail_at(&c->p, TS_ERR_LIMIT, cat,
                                   "a subtree %zu nodes after its parent (CatBoost's step is 16 bits)", child - me);
            c->cb.steps[2 * me + (left ? 0 : 1)] = (uint16_t)(child - me);
        } else if (!strcmp(key, "value") && !has_value) {
            has_value = 1;
            tsj_type t;
            size_t vat = tsj_offset(&c->p), first = c->cb.n_leaves;
            TS_TRY(tsj_peek(&c->p, &t));
            if (t == TSJ_ARRAY) {
                TS_TRY(tsj_array_begin(&c->p));
                while (tsj_array_next(&c->p, &more) == TS_OK && more) {
                    double v;
                    TS_TRY(read_double(c, "value", &v));
                    TS_TRY(push_leaf_value(c, v));
                }
                TS_TRY(c->p.status);
            } else {
                double v;
                TS_TRY(read_double(c, "value", &v));
                TS_TRY(push_leaf_value(c, v));
            }
            if (first > UINT32_MAX - TSM_MAX_OUTPUTS) return tsj_fail_at(&c->p, TS_ERR_LIMIT, vat, "too many leaf values");
            TS_TRY(set_dim(c, vat, c->cb.n_leaves - first));
            c->cb.node_leaf[me] = (uint32_t)first;
        } else if (!strcmp(key, "split") || !strcmp(key, "left") || !strcmp(key, "right") || !strcmp(key, "value")) {
            return tsj_fail(&c->p, TS_ERR_PARSE, "\"%s\" appears twice in a node", key);
        } else {
            TS_TRY(tsj_skip(&c->p));
        }
    }
    TS_TRY(c->p.status);
    if (has_value && (has_split || has_left || has_right))
        return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "a node with both \"value\" and \"split\", \"left\" or \"right\"");
    if (!has_value && !(has_split && has_left && has_right))
        return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "a node needs \"value\", or \"split\", \"left\" and \"right\"");
    *idx = me;
    return TS_OK;
}

static ts_status read_trees(cj_ctx *c, int oblivious) {
    int more;
    if (c->has_trees) return tsj_fail(&c->p, TS_ERR_PARSE, "both \"oblivious_trees\" and \"trees\", or one twice");
    c->has_trees = 1;
    c->cb.oblivious = oblivious;
    c->trees_byte = tsj_offset(&c->p);
    TS_TRY(tsj_array_begin(&c->p));
    while (tsj_array_next(&c->p, &more) == TS_OK && more) {
        if (oblivious) {
            TS_TRY(read_oblivious_tree(c));
            continue;
        }
        if (c->cb.n_trees >= TSM_MAX_TREES) return tsj_fail(&c->p, TS_ERR_LIMIT, "more than %u trees", TSM_MAX_TREES);
        size_t first = c->cb.n_steps, root;
        TS_TRY(read_node(c, &root));
        TS_TRY(grow(c, (void **)&c->cb.tree_sizes, &c->cap_sizes, c->cb.n_trees + 1, sizeof *c->cb.tree_sizes));
        int32_t *starts = realloc(c->cb.tree_starts, c->cap_sizes * sizeof *starts);
        if (!starts) return oom(c);
        c->cb.tree_starts = starts;
        c->cb.tree_starts[c->cb.n_trees] = (int32_t)first;
        c->cb.tree_sizes[c->cb.n_trees++] = (int32_t)(c->cb.n_steps - first);
    }
    return c->p.status;
}

static ts_status read_scale_and_bias(cj_ctx *c) {
    int more, more2;
    size_t at = tsj_offset(&c->p), i = 0;
    TS_TRY(tsj_array_begin(&c->p));
    while (tsj_array_next(&c->p, &more) == TS_OK && more) {
        if (i == 0) {
            TS_TRY(read_double(c, "scale_and_bias", &c->cb.scale));
        } else if (i == 1) {
            size_t cap = 0;
            TS_TRY(tsj_array_begin(&c->p));
            while (tsj_array_next(&c->p, &more2) == TS_OK && more2) {
                if (c->cb.n_bias >= TSM_MAX_OUTPUTS) return tsj_fail(&c->p, TS_ERR_LIMIT, "too many bias values");
                TS_TRY(grow(c, (void **)&c->cb.bias, &cap, c->cb.n_bias + 1, sizeof *c->cb.bias));
                TS_TRY(read_double(c, "scale_and_bias", &c->cb.bias[c->cb.n_bias++]));
            }
            TS_TRY(c->p.status);
        } else {
            return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "\"scale_and_bias\" has more than [scale, [bias, ...]]");
        }
        i++;
    }
    TS_TRY(c->p.status);
    if (i != 2) return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "\"scale_and_bias\" is not [scale, [bias, ...]]");
    return TS_OK;
}

static ts_status read_model_info(cj_ctx *c) {
    char key[TSJ_KEY_MAX];
    int has;
    tsj_type t;
    TS_TRY(tsj_object_begin(&c->p));
    while (tsj_object_next(&c->p, key, &has) == TS_OK && has) {
        if (!strcmp(key, "params") && tsj_peek(&c->p, &t) == TS_OK && t == TSJ_OBJECT) {
            /* best effort on a copy of the parser (no error reported), then skipped for real */
            tsj_parser q = c->p;
            q.err = NULL;
            tscb_params_objective(&q, c->cb.objective);
        } else if (!strcmp(key, "class_params") && tsj_peek(&c->p, &t) == TS_OK && t == TSJ_OBJECT) {
            tsj_parser q = c->p;
            q.err = NULL;
            tscb_class_params(&q, &c->cb.n_class_names, &c->cb.n_class_labels);
        }
        TS_TRY(tsj_skip(&c->p));
    }
    return c->p.status;
}

static ts_status parse_document(cj_ctx *c) {
    char key[TSJ_KEY_MAX];
    int has;
    tsj_type t;
    TS_TRY(tsj_peek(&c->p, &t));
    if (t != TSJ_OBJECT)
        return tsj_fail(&c->p, TS_ERR_PARSE, "expected a JSON object (CatBoost save_model(format=\"json\"))");
    c->cb.scale = 1.0;
    TS_TRY(tsj_object_begin(&c->p));
    while (tsj_object_next(&c->p, key, &has) == TS_OK && has) {
        if (!strcmp(key, "features_info"))
            TS_TRY(read_features_info(c));
        else if (!strcmp(key, "ctr_data"))
            TS_TRY(read_ctr_data(c));
        else if (!strcmp(key, "oblivious_trees"))
            TS_TRY(read_trees(c, 1));
        else if (!strcmp(key, "trees"))
            TS_TRY(read_trees(c, 0));
        else if (!strcmp(key, "scale_and_bias"))
            TS_TRY(read_scale_and_bias(c));
        else if (!strcmp(key, "model_info"))
            TS_TRY(read_model_info(c));
        else
            TS_TRY(tsj_skip(&c->p));
    }
    TS_TRY(c->p.status);
    TS_TRY(tsj_end(&c->p));
    if (!c->has_trees)
        return tsio_fail(c->err, TS_ERR_PARSE, c->name, 0, 0,
                         "no \"oblivious_trees\" or \"trees\" key: not a CatBoost JSON model");
    if (!c->has_features)
        return tsio_fail(c->err, TS_ERR_PARSE, c->name, 0, 0, "no \"features_info\" key: not a CatBoost JSON model");
    if (!c->dim_known) c->cb.dim = c->cb.n_bias ? c->cb.n_bias : 1;
    if (c->cb.n_bias == 0) { /* no scale_and_bias: the identity */
        c->cb.bias = calloc(c->cb.dim, sizeof *c->cb.bias);
        if (!c->cb.bias) return oom(c);
        c->cb.n_bias = c->cb.dim;
    }
    return TS_OK;
}

/* Each split's split_index must be the border it says it is (feature index and value). */
static ts_status check_splits(cj_ctx *c) {
    size_t n_bins = 0;
    for (uint32_t i = 0; i < c->cb.n_floats; i++) n_bins += c->cb.floats[i].n_borders;
    for (size_t s = 0; s < c->cb.n_splits; s++) {
        if (c->said_feature[s] < 0) continue;
        size_t bin = (size_t)c->cb.splits[s];
        if (bin >= n_bins) continue; /* tscb_build reports it */
        uint32_t f = 0;
        while (bin >= c->cb.floats[f].n_borders) bin -= c->cb.floats[f++].n_borders;
        float b = c->cb.floats[f].borders[bin];
        if (c->cb.floats[f].index != c->said_feature[s] || !(b == c->said_border[s]))
            return tsio_fail(c->err, TS_ERR_PARSE, c->name, tsio_line_at(c->p.data, c->p.size, c->trees_byte),
                             c->trees_byte,
                             "split_index %d is border %.9g of float feature %d, but the split says border %.9g of "
                             "float feature %d",
                             (int)c->cb.splits[s], (double)b, (int)c->cb.floats[f].index, (double)c->said_border[s],
                             (int)c->said_feature[s]);
    }
    return TS_OK;
}

ts_status tsio_load_catboost_json(const char *data, size_t size, const char *name, ts_model **out, ts_error *err) {
    cj_ctx c;
    memset(&c, 0, sizeof c);
    *out = NULL;
    if (!name) name = "<buffer>";
    c.name = name;
    c.err = err;
    tsj_init(&c.p, data, size, tsio_skip_bom(data, size), name, err);
    ts_status st = parse_document(&c);
    if (st == TS_OK) st = check_splits(&c);
    if (st == TS_OK) st = tscb_build(&c.cb, TS_FORMAT_CATBOOST_JSON, name, out, err);
    tscb_model_clear(&c.cb);
    free(c.said_feature);
    free(c.said_border);
    return st;
}

/* ---- detection --------------------------------------------------------------------- */

#define CJ_DETECT_WINDOW ((size_t)1 << 20)

int tsio_is_catboost_json(const char *data, size_t size) {
    tsj_parser p;
    char key[TSJ_KEY_MAX];
    int has;
    tsj_init(&p, data, size < CJ_DETECT_WINDOW ? size : CJ_DETECT_WINDOW, 0, "", NULL);
    if (tsj_object_begin(&p) != TS_OK) return 0;
    while (tsj_object_next(&p, key, &has) == TS_OK && has) {
        if (!strcmp(key, "oblivious_trees") || !strcmp(key, "ctr_data") || !strcmp(key, "features_info") || !strcmp(key, "scale_and_bias"))
            return 1;
        if (!strcmp(key, "learner") || !strcmp(key, "tree_info") || !strcmp(key, "splits")) return 0;
        if (tsj_skip(&p) != TS_OK) return 0;
    }
    return 0;
}
