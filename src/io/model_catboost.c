/* model_catboost.c: loader for CatBoost's binary model (.cbm, save_model()'s default): "CBM1", a size, a FlatBuffers TModelCore. */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "io/catboost_core.h"
#include "io/flatbuf.h"
#include "io/json.h"
#include "io/loaders.h"
#include "io/text.h"
#include "model/forest.h"

/*
 * Layout (catboost/libs/model/model.cpp, TFullModel::Save, CatBoost 1.x):
 *   "CBM1"   4 bytes
 *   size     u32 little-endian (util's SaveSize: 0xffffffff then a u64 for >= 4 GiB)
 *   core     `size` bytes: a FlatBuffers buffer whose root is TModelCore
 *   parts    what ModelPartIds names (CTR tables, text and embedding processing): only
 *            models with categorical, text or embedding features have them
 * Schema (catboost/libs/model/flatbuffers/model.fbs, features.fbs), field ids:
 *   TModelCore  0 FormatVersion:string ("FlabuffersModel_v1")  1 ModelTrees:TModelTrees
 *               2 InfoMap:[TKeyValue]  3 ModelPartIds:[string]
 *   TModelTrees 0 ApproxDimension:int  1 TreeSplits:[int]  2 TreeSizes:[int]
 *               3 TreeStartOffsets:[int]  4 CatFeatures  5 FloatFeatures  6 OneHotFeatures
 *               7 CtrFeatures  8 LeafValues:[double]  9 LeafWeights
 *               10 NonSymmetricStepNodes:[struct {u16 left, u16 right}]
 *               11 NonSymmetricNodeIdToLeafId:[uint32]  12 TextFeatures
 *               13 EstimatedFeatures  14 Scale:double=1  15 Bias:double=0
 *               16 MultiBias:[double]  17 RepackedBins  18 EmbeddingFeatures
 *   TFloatFeature 0 HasNans:bool  1 Index:int=-1  2 FlatIndex:int=-1  3 Borders:[float]
 *               4 FeatureId:string  5 NanValueTreatment:byte (AsIs, AsFalse, AsTrue)
 *   TCatFeature / TTextFeature / TEmbeddingFeature: 0 Index  1 FlatIndex  2 FeatureId
 *   TKeyValue   0 Key:string  1 Value:string
 * The bias is MultiBias when it is present and not empty, else Bias for every output
 * (TModelTrees::SetScaleAndBias). What the arrays mean: catboost_core.h.
 * Categorical features with one-hot splits are read (catboost_core.c, "Categorical
 * features"); CTR splits are refused (their tables are in the parts: the JSON model has
 * them), and so are text and embedding features, by name.
 */

#define CBM_MAGIC "CBM1"
#define CBM_FORMAT_VERSION "FlabuffersModel_v1"

typedef struct cbm_ctx {
    const char *name;
    ts_error *err;
    tscb_model cb;
} cbm_ctx;

static ts_status bad(cbm_ctx *c, const char *what) {
    return tsio_fail(c->err, TS_ERR_PARSE, c->name, 0, 0, "%s: out of the buffer or malformed (a FlatBuffers offset, "
                     "vtable or length outside the file)", what);
}

static ts_status oom(cbm_ctx *c) { return tsio_fail(c->err, TS_ERR_NO_MEMORY, c->name, 0, 0, "out of memory"); }

static ts_status i32_vector(cbm_ctx *c, const tsfb_table *t, unsigned id, const char *what, int32_t **out,
                            size_t *n) {
    tsfb_vector v;
    if (tsfb_vector_field(t, id, 4, &v) < 0) return bad(c, what);
    *n = v.len;
    *out = NULL;
    if (v.len == 0) return TS_OK;
    *out = malloc(v.len * sizeof **out);
    if (!*out) return oom(c);
    for (size_t i = 0; i < v.len; i++) (*out)[i] = tsfb_vec_i32(&v, i);
    return TS_OK;
}

/* A feature kind the IR cannot score yet: refused, naming the first such feature. */
static ts_status refuse_kind(cbm_ctx *c, const tsfb_table *trees, unsigned id, const char *kind) {
    tsfb_vector v;
    if (tsfb_vector_field(trees, id, 4, &v) < 0) return bad(c, kind);
    if (v.len == 0) return TS_OK;
    tsfb_table f;
    int32_t index = -1, flat = -1;
    const char *s = "";
    size_t n = 0;
    if (tsfb_vector_table(&v, 0, &f) < 0 || tsfb_i32(&f, 0, -1, &index) < 0 || tsfb_i32(&f, 1, -1, &flat) < 0 ||
        tsfb_string_field(&f, 2, &s, &n) < 0)
        return bad(c, kind);
    char ex[64];
    tsio_excerpt(ex, sizeof ex, s, n);
    return tsio_fail(c->err, TS_ERR_UNSUPPORTED, c->name, 0, 0,
                     "the model has %zu %s feature%s (the first: %s feature %d, column %d%s%s%s): only float and "
                     "categorical features are supported (text and embedding features are not)",
                     v.len, kind, v.len == 1 ? "" : "s", kind, (int)index, (int)flat, n ? ", '" : "", n ? ex : "",
                     n ? "'" : "");
}

/* CatFeatures (TCatFeature: 0 Index, 1 FlatIndex, 2 FeatureId) and OneHotFeatures
 * (TOneHotFeature: 0 CatFeatureIndex, 1 Values:[int], 2 StringValues:[string]): the
 * categorical features and their one-hot values. CtrFeatures are refused: their tables are
 * in the model parts after the core, which this loader does not read yet. */
static ts_status read_cat_features(cbm_ctx *c, const tsfb_table *trees) {
    tsfb_vector v, oh;
    if (tsfb_vector_field(trees, 4, 4, &v) < 0) return bad(c, "ModelTrees.CatFeatures");
    if (tsfb_vector_field(trees, 7, 4, &oh) < 0) return bad(c, "ModelTrees.CtrFeatures");
    if (oh.len)
        return tsio_fail(c->err, TS_ERR_UNSUPPORTED, c->name, 0, 0,
                         "the model has %zu CTR feature%s: CTR splits are read from CatBoost's JSON model only "
                         "(save_model(path, format=\"json\") keeps the CTR tables); this .cbm loader reads float "
                         "and one-hot splits",
                         oh.len, oh.len == 1 ? "" : "s");
    if (v.len > TSM_MAX_FEATURES)
        return tsio_fail(c->err, TS_ERR_LIMIT, c->name, 0, 0, "%zu categorical features (the limit is %u)", v.len,
                         TSM_MAX_FEATURES);
    if (v.len == 0) return TS_OK;
    c->cb.cats = calloc(v.len, sizeof *c->cb.cats);
    if (!c->cb.cats) return oom(c);
    c->cb.n_cats = (uint32_t)v.len;
    for (size_t i = 0; i < v.len; i++) {
        tscb_cat *f = &c->cb.cats[i];
        tsfb_table ft;
        const char *s;
        size_t n;
        if (tsfb_vector_table(&v, i, &ft) < 0 || tsfb_i32(&ft, 0, -1, &f->index) < 0 ||
            tsfb_i32(&ft, 1, -1, &f->flat_index) < 0 || tsfb_string_field(&ft, 2, &s, &n) < 0)
            return bad(c, "a CatFeatures entry");
        if (f->index != (int32_t)i)
            return tsio_fail(c->err, TS_ERR_PARSE, c->name, 0, 0, "categorical feature %zu has Index %d", i,
                             (int)f->index);
        if (n && !memchr(s, '\0', n)) {
            f->name = malloc(n + 1);
            if (!f->name) return oom(c);
            memcpy(f->name, s, n);
            f->name[n] = '\0';
        }
    }
    if (tsfb_vector_field(trees, 6, 4, &oh) < 0) return bad(c, "ModelTrees.OneHotFeatures");
    int32_t last = -1;
    for (size_t i = 0; i < oh.len; i++) {
        tsfb_table ft;
        tsfb_vector vals;
        int32_t cat;
        if (tsfb_vector_table(&oh, i, &ft) < 0 || tsfb_i32(&ft, 0, -1, &cat) < 0 ||
            tsfb_vector_field(&ft, 1, 4, &vals) < 0)
            return bad(c, "a OneHotFeatures entry");
        if (cat < 0 || (uint32_t)cat >= c->cb.n_cats || cat <= last)
            return tsio_fail(c->err, TS_ERR_PARSE, c->name, 0, 0,
                             "one-hot feature %zu names categorical feature %d (of %u, ascending expected)", i,
                             (int)cat, c->cb.n_cats);
        last = cat;
        tscb_cat *f = &c->cb.cats[cat];
        if (vals.len > TSM_MAX_LEAVES) return bad(c, "OneHotFeatures.Values");
        f->n_onehot = (uint32_t)vals.len;
        if (vals.len) {
            f->onehot = malloc(vals.len * sizeof *f->onehot);
            if (!f->onehot) return oom(c);
            for (size_t k = 0; k < vals.len; k++) f->onehot[k] = (uint32_t)tsfb_vec_i32(&vals, k);
        }
    }
    return TS_OK;
}

static ts_status read_float_features(cbm_ctx *c, const tsfb_table *trees) {
    tsfb_vector v;
    if (tsfb_vector_field(trees, 5, 4, &v) < 0) return bad(c, "ModelTrees.FloatFeatures");
    if (v.len > TSM_MAX_FEATURES)
        return tsio_fail(c->err, TS_ERR_LIMIT, c->name, 0, 0, "%zu float features (the limit is %u)", v.len,
                         TSM_MAX_FEATURES);
    if (v.len == 0) return TS_OK;
    c->cb.floats = calloc(v.len, sizeof *c->cb.floats);
    if (!c->cb.floats) return oom(c);
    c->cb.n_floats = (uint32_t)v.len;
    for (size_t i = 0; i < v.len; i++) {
        tscb_float *f = &c->cb.floats[i];
        tsfb_table ft;
        tsfb_vector b;
        const char *s;
        size_t n;
        if (tsfb_vector_table(&v, i, &ft) < 0 || tsfb_bool(&ft, 0, 0, &f->has_nans) < 0 ||
            tsfb_i32(&ft, 1, -1, &f->index) < 0 || tsfb_i32(&ft, 2, -1, &f->flat_index) < 0 ||
            tsfb_vector_field(&ft, 3, 4, &b) < 0 || tsfb_string_field(&ft, 4, &s, &n) < 0 ||
            tsfb_i8(&ft, 5, TSCB_NAN_AS_IS, &f->nan_treatment) < 0)
            return bad(c, "a FloatFeatures entry");
        if (b.len > UINT32_MAX) return bad(c, "FloatFeatures.Borders");
        f->n_borders = (uint32_t)b.len;
        if (b.len) {
            f->borders = malloc(b.len * sizeof *f->borders);
            if (!f->borders) return oom(c);
            for (size_t k = 0; k < b.len; k++) f->borders[k] = tsfb_vec_f32(&b, k);
        }
        if (n) {
            f->name = malloc(n + 1);
            if (!f->name) return oom(c);
            memcpy(f->name, s, n);
            f->name[n] = '\0';
            if (memchr(s, '\0', n)) f->name[0] = '\0'; /* a name with a NUL is no name */
        }
    }
    return TS_OK;
}

/* The loss function's name from the "params" JSON of the InfoMap, when it has one. */
static void read_objective(cbm_ctx *c, const tsfb_table *core) {
    tsfb_vector v;
    if (tsfb_vector_field(core, 2, 4, &v) != 1) return;
    for (size_t i = 0; i < v.len; i++) {
        tsfb_table kv;
        const char *k, *val;
        size_t kn, vn;
        if (tsfb_vector_table(&v, i, &kv) < 0 || tsfb_string_field(&kv, 0, &k, &kn) < 0 ||
            tsfb_string_field(&kv, 1, &val, &vn) < 0)
            return;
        if (kn == 6 && !memcmp(k, "params", 6)) {
            tsj_parser p;
            tsj_init(&p, val, vn, 0, c->name, NULL);
            tscb_params_objective(&p, c->cb.objective);
            return;
        }
    }
}

static ts_status read_core(cbm_ctx *c, const uint8_t *buf, size_t size) {
    tsfb_table core, trees;
    const char *s;
    size_t n;
    if (tsfb_root(buf, size, &core) < 0) return bad(c, "the TModelCore root table");
    if (tsfb_string_field(&core, 0, &s, &n) < 0) return bad(c, "TModelCore.FormatVersion");
    if (n != strlen(CBM_FORMAT_VERSION) || memcmp(s, CBM_FORMAT_VERSION, n) != 0) {
        char ex[64];
        tsio_excerpt(ex, sizeof ex, s, n);
        return tsio_fail(c->err, TS_ERR_UNSUPPORTED, c->name, 0, 0,
                         "core format version '%s' (this loader reads '" CBM_FORMAT_VERSION "')", ex);
    }
    int r = tsfb_table_field(&core, 1, &trees);
    if (r < 0) return bad(c, "TModelCore.ModelTrees");
    if (r == 0) return tsio_fail(c->err, TS_ERR_PARSE, c->name, 0, 0, "no ModelTrees in the model");
    TS_TRY(refuse_kind(c, &trees, 12, "text"));
    TS_TRY(refuse_kind(c, &trees, 18, "embedding"));
    static const struct { unsigned id; const char *what; } also[] = {{13, "estimated (text or embedding)"}};
    for (size_t i = 0; i < sizeof also / sizeof also[0]; i++) {
        tsfb_vector v;
        if (tsfb_vector_field(&trees, also[i].id, 4, &v) < 0) return bad(c, also[i].what);
        if (v.len)
            return tsio_fail(c->err, TS_ERR_UNSUPPORTED, c->name, 0, 0,
                             "the model has %zu %s feature%s: only float and categorical features are supported", v.len,
                             also[i].what, v.len == 1 ? "" : "s");
    }
    int32_t dim;
    if (tsfb_i32(&trees, 0, 0, &dim) < 0) return bad(c, "ModelTrees.ApproxDimension");
    if (dim < 1 || (uint32_t)dim > TSM_MAX_OUTPUTS)
        return tsio_fail(c->err, dim < 1 ? TS_ERR_PARSE : TS_ERR_LIMIT, c->name, 0, 0,
                         "ApproxDimension %d is outside [1, %u]", (int)dim, TSM_MAX_OUTPUTS);
    c->cb.dim = (uint32_t)dim;
    TS_TRY(read_float_features(c, &trees));
    TS_TRY(read_cat_features(c, &trees));
    size_t n_sizes, n_starts;
    TS_TRY(i32_vector(c, &trees, 1, "ModelTrees.TreeSplits", &c->cb.splits, &c->cb.n_splits));
    TS_TRY(i32_vector(c, &trees, 2, "ModelTrees.TreeSizes", &c->cb.tree_sizes, &n_sizes));
    TS_TRY(i32_vector(c, &trees, 3, "ModelTrees.TreeStartOffsets", &c->cb.tree_starts, &n_starts));
    if (n_starts != n_sizes)
        return tsio_fail(c->err, TS_ERR_PARSE, c->name, 0, 0, "%zu TreeSizes but %zu TreeStartOffsets", n_sizes,
                         n_starts);
    if (n_sizes > TSM_MAX_TREES)
        return tsio_fail(c->err, TS_ERR_LIMIT, c->name, 0, 0, "%zu trees (the limit is %u)", n_sizes, TSM_MAX_TREES);
    c->cb.n_trees = (uint32_t)n_sizes;
    tsfb_vector v;
    if (tsfb_vector_field(&trees, 8, 8, &v) < 0) return bad(c, "ModelTrees.LeafValues");
    c->cb.n_leaves = v.len;
    if (v.len) {
        c->cb.leaves = malloc(v.len * sizeof *c->cb.leaves);
        if (!c->cb.leaves) return oom(c);
        for (size_t i = 0; i < v.len; i++) c->cb.leaves[i] = tsfb_vec_f64(&v, i);
    }
    if (tsfb_vector_field(&trees, 10, 4, &v) < 0) return bad(c, "ModelTrees.NonSymmetricStepNodes");
    c->cb.oblivious = v.len == 0;
    c->cb.n_steps = v.len;
    if (v.len) {
        c->cb.steps = malloc(v.len * 2 * sizeof *c->cb.steps);
        if (!c->cb.steps) return oom(c);
        for (size_t i = 0; i < 2 * v.len; i++) c->cb.steps[i] = tsfb_u16(v.buf, v.pos + 2 * i);
    }
    if (tsfb_vector_field(&trees, 11, 4, &v) < 0) return bad(c, "ModelTrees.NonSymmetricNodeIdToLeafId");
    c->cb.n_node_leaf = v.len;
    if (v.len) {
        c->cb.node_leaf = malloc(v.len * sizeof *c->cb.node_leaf);
        if (!c->cb.node_leaf) return oom(c);
        for (size_t i = 0; i < v.len; i++) c->cb.node_leaf[i] = tsfb_vec_u32(&v, i);
    }
    double bias;
    if (tsfb_f64(&trees, 14, 1.0, &c->cb.scale) < 0 || tsfb_f64(&trees, 15, 0.0, &bias) < 0)
        return bad(c, "ModelTrees.Scale or Bias");
    if (tsfb_vector_field(&trees, 16, 8, &v) < 0) return bad(c, "ModelTrees.MultiBias");
    c->cb.bias = malloc((v.len ? v.len : c->cb.dim) * sizeof *c->cb.bias);
    if (!c->cb.bias) return oom(c);
    if (v.len) {
        if (v.len > TSM_MAX_OUTPUTS) return bad(c, "ModelTrees.MultiBias");
        c->cb.n_bias = (uint32_t)v.len;
        for (size_t i = 0; i < v.len; i++) c->cb.bias[i] = tsfb_vec_f64(&v, i);
    } else {
        if (c->cb.dim > 1 && bias != 0.0)
            return tsio_fail(c->err, TS_ERR_PARSE, c->name, 0, 0, "one Bias for ApproxDimension %u", c->cb.dim);
        c->cb.n_bias = c->cb.dim;
        for (uint32_t k = 0; k < c->cb.dim; k++) c->cb.bias[k] = bias;
    }
    read_objective(c, &core);
    return TS_OK;
}

ts_status tsio_load_catboost(const char *data, size_t size, const char *name, ts_model **out, ts_error *err) {
    cbm_ctx c;
    memset(&c, 0, sizeof c);
    *out = NULL;
    if (!name) name = "<buffer>";
    c.name = name;
    c.err = err;
    const uint8_t *b = (const uint8_t *)data;
    if (size < 8 || memcmp(data, CBM_MAGIC, 4) != 0)
        return tsio_fail(err, TS_ERR_PARSE, name, 0, 0, "not a CatBoost binary model (expected \"CBM1\" and a size)");
    size_t at = 8;
    uint64_t core = tsfb_u32(b, 4);
    if (core == 0xffffffffu) {
        if (size < 16) return tsio_fail(err, TS_ERR_PARSE, name, 0, 0, "truncated model: no core size");
        core = tsfb_u64(b, 8);
        at = 16;
    }
    if (core > size - at)
        return tsio_fail(err, TS_ERR_PARSE, name, 0, 0,
                         "truncated model: the core is %llu bytes, the file has %zu after its header",
                         (unsigned long long)core, size - at);
    ts_status st = read_core(&c, b + at, (size_t)core);
    if (st == TS_OK) st = tscb_build(&c.cb, TS_FORMAT_CATBOOST, name, out, err);
    tscb_model_clear(&c.cb);
    return st;
}

int tsio_is_catboost_cbm(const char *data, size_t size) { return size >= 4 && memcmp(data, CBM_MAGIC, 4) == 0; }
