/* model_catboost.c: loader for CatBoost's binary model (.cbm, save_model()'s default): "CBM1", a size, a FlatBuffers TModelCore. */
#include <stdio.h>
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
 * Categorical features with one-hot and CTR splits are read (catboost_core.c,
 * "Categorical features"; the CTR tables from the static CTR provider part); text and
 * embedding features are refused by name.
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
 * categorical features and their one-hot values. */
static ts_status read_cat_features(cbm_ctx *c, const tsfb_table *trees) {
    tsfb_vector v, oh;
    if (tsfb_vector_field(trees, 4, 4, &v) < 0) return bad(c, "ModelTrees.CatFeatures");
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

static int fb_f32(const tsfb_table *t, unsigned id, float dflt, float *out) {
    size_t pos;
    int r = tsfb_field(t, id, 4, &pos);
    *out = dflt;
    if (r == 1) {
        uint32_t u = tsfb_u32(t->buf, pos);
        memcpy(out, &u, sizeof *out);
    }
    return r;
}

/* Largest number of elements of one CTR projection accepted (CatBoost's max_ctr_complexity
 * is at most a few). */
#define CBM_MAX_ELEMS 64

/* A TModelCtrBase (0 FeatureCombination: TFeatureCombination {0 CatFeatures:[int],
 * 1 FloatSplits:[struct TFloatSplit {Index:int, Border:float}], 2 OneHotSplits:[struct
 * TOneHotSplit {Index:int, Value:int}]}, 1 CtrType:byte (ECtrType: Borders, Buckets,
 * BinarizedTargetMeanValue, FloatTargetMeanValue, Counter, FeatureFreq), 2
 * TargetBorderClassifierIdx:int): its type, its table's id (a new string naming type,
 * classifier and every element of the projection), its categorical feature (*cat; -1 for a
 * projection of more than one element) and, when elems is not NULL, its elements in
 * CatBoost's hash order (categorical features, float splits, one-hot splits). */
static ts_status read_ctr_base(cbm_ctx *c, const tsfb_table *base, int *type, char **id, int32_t *cat,
                               tscb_elem **elems, uint32_t *n_elems) {
    tsfb_table comb;
    tsfb_vector cats, fl, oh;
    int32_t tbc;
    int r = tsfb_table_field(base, 0, &comb);
    if (r < 0 || tsfb_i8(base, 1, 0, type) < 0 || tsfb_i32(base, 2, 0, &tbc) < 0) return bad(c, "a TModelCtrBase");
    cats.len = fl.len = oh.len = 0;
    if (r == 1 && (tsfb_vector_field(&comb, 0, 4, &cats) < 0 || tsfb_vector_field(&comb, 1, 8, &fl) < 0 ||
                   tsfb_vector_field(&comb, 2, 8, &oh) < 0))
        return bad(c, "a TFeatureCombination");
    if (*type < TSCB_CTR_BORDERS || *type > TSCB_CTR_FEATURE_FREQ)
        return tsio_fail(c->err, TS_ERR_UNSUPPORTED, c->name, 0, 0, "CTR type %d is not supported", *type);
    size_t n = cats.len + fl.len + oh.len;
    if (n == 0 || n > CBM_MAX_ELEMS)
        return tsio_fail(c->err, n ? TS_ERR_LIMIT : TS_ERR_PARSE, c->name, 0, 0,
                         "a CTR over a projection of %zu elements (1 to %d are read)", n, CBM_MAX_ELEMS);
    *cat = cats.len == 1 && n == 1 ? tsfb_vec_i32(&cats, 0) : -1;
    tscb_elem e[CBM_MAX_ELEMS];
    for (size_t i = 0; i < n; i++) {
        if (i < cats.len) {
            e[i] = (tscb_elem){TSCB_ELEM_CAT, tsfb_vec_i32(&cats, i), 0.0f, 0};
        } else if (i < cats.len + fl.len) {
            size_t at = fl.pos + 8 * (i - cats.len);
            uint32_t u = tsfb_u32(fl.buf, at + 4);
            float border;
            memcpy(&border, &u, sizeof border);
            e[i] = (tscb_elem){TSCB_ELEM_FLOAT, (int32_t)tsfb_u32(fl.buf, at), border, 0};
        } else {
            size_t at = oh.pos + 8 * (i - cats.len - fl.len);
            e[i] = (tscb_elem){TSCB_ELEM_ONEHOT, (int32_t)tsfb_u32(oh.buf, at), 0.0f, tsfb_u32(oh.buf, at + 4)};
        }
    }
    size_t cap = 48 + 40 * n;
    *id = malloc(cap);
    if (!*id) return oom(c);
    size_t len = (size_t)snprintf(*id, cap, "type %d, classifier %d:", *type, (int)tbc);
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &e[i].border, sizeof bits);
        len += (size_t)snprintf(*id + len, cap - len, " %c%d/%08x/%08x", "CFO"[e[i].kind], (int)e[i].feature,
                                (unsigned)bits, (unsigned)e[i].value);
    }
    if (elems) {
        *elems = malloc(n * sizeof **elems);
        if (!*elems) return oom(c);
        memcpy(*elems, e, n * sizeof **elems);
        *n_elems = (uint32_t)n;
    }
    return TS_OK;
}

/* CtrFeatures (TCtrFeature: 0 Ctr: TModelCtr {0 Base, 1 TargetBorderIdx, 2 PriorNum,
 * 3 PriorDenom = 1, 4 Shift, 5 Scale = 1}, 1 Borders:[float]). */
static ts_status read_ctr_features(cbm_ctx *c, const tsfb_table *trees) {
    tsfb_vector v;
    if (tsfb_vector_field(trees, 7, 4, &v) < 0) return bad(c, "ModelTrees.CtrFeatures");
    if (v.len > TSM_MAX_FEATURES)
        return tsio_fail(c->err, TS_ERR_LIMIT, c->name, 0, 0, "%zu CTR features (the limit is %u)", v.len,
                         TSM_MAX_FEATURES);
    if (v.len == 0) return TS_OK;
    c->cb.ctrs = calloc(v.len, sizeof *c->cb.ctrs);
    if (!c->cb.ctrs) return oom(c);
    c->cb.n_ctrs = (uint32_t)v.len;
    for (size_t i = 0; i < v.len; i++) {
        tscb_ctr *r = &c->cb.ctrs[i];
        tsfb_table ft, ctr, base;
        tsfb_vector b;
        int32_t tbi;
        if (tsfb_vector_table(&v, i, &ft) < 0 || tsfb_table_field(&ft, 0, &ctr) != 1 ||
            tsfb_vector_field(&ft, 1, 4, &b) < 0 || tsfb_table_field(&ctr, 0, &base) != 1 ||
            tsfb_i32(&ctr, 1, 0, &tbi) < 0 || fb_f32(&ctr, 2, 0.0f, &r->prior_num) < 0 ||
            fb_f32(&ctr, 3, 1.0f, &r->prior_denom) < 0 || fb_f32(&ctr, 4, 0.0f, &r->shift) < 0 ||
            fb_f32(&ctr, 5, 1.0f, &r->scale) < 0)
            return bad(c, "a CtrFeatures entry");
        if (tbi < 0 || tbi > 65535)
            return tsio_fail(c->err, TS_ERR_PARSE, c->name, 0, 0, "CTR %zu: TargetBorderIdx %d", i, (int)tbi);
        r->target_border_idx = (uint32_t)tbi;
        TS_TRY(read_ctr_base(c, &base, &r->type, &r->table_id, &r->cat, &r->elems, &r->n_elems));
        if (b.len > UINT32_MAX / 2) return bad(c, "CtrFeatures.Borders");
        r->n_borders = (uint32_t)b.len;
        if (b.len) {
            r->borders = malloc(b.len * sizeof *r->borders);
            if (!r->borders) return oom(c);
            for (size_t k = 0; k < b.len; k++) r->borders[k] = tsfb_vec_f32(&b, k);
        }
    }
    return TS_OK;
}

/* One TCtrValueTable (0 ModelCtrBase, 1 IndexHashRaw:[ubyte]: buckets of {u64 hash, u32
 * index}, 12 bytes each, hash 2^64-1 empty; 2 CTRBlob:[ubyte]: the rows an index names:
 * {float sum, int count} for the mean value types, an int for Counter and FeatureFreq,
 * TargetClassesCount ints for Borders and Buckets; 3 CounterDenominator:int; 4
 * TargetClassesCount:int) into a table of (hash, values) rows. */
static ts_status read_ctr_table(cbm_ctx *c, const uint8_t *buf, size_t size, tscb_ctr_table *t) {
    tsfb_table root, base;
    tsfb_vector hash, blob;
    int32_t denom, classes;
    int type;
    int32_t cat;
    if (tsfb_root(buf, size, &root) < 0 || tsfb_table_field(&root, 0, &base) != 1 ||
        tsfb_vector_field(&root, 1, 1, &hash) < 0 || tsfb_vector_field(&root, 2, 1, &blob) < 0 ||
        tsfb_i32(&root, 3, 0, &denom) < 0 || tsfb_i32(&root, 4, 0, &classes) < 0)
        return bad(c, "a CTR table (TCtrValueTable)");
    TS_TRY(read_ctr_base(c, &base, &type, &t->id, &cat, NULL, NULL));
    t->counter_denominator = denom;
    uint32_t vals = type == TSCB_CTR_COUNTER || type == TSCB_CTR_FEATURE_FREQ ? 1
                    : type == TSCB_CTR_BINARIZED_MEAN || type == TSCB_CTR_FLOAT_MEAN ? 2
                                                                                       : (uint32_t)classes;
    if ((type == TSCB_CTR_BORDERS || type == TSCB_CTR_BUCKETS) && (classes < 1 || classes > 65535))
        return tsio_fail(c->err, TS_ERR_PARSE, c->name, 0, 0, "a CTR table of %d target classes", (int)classes);
    if (hash.len % 12)
        return tsio_fail(c->err, TS_ERR_PARSE, c->name, 0, 0, "a CTR table's IndexHashRaw of %zu bytes (not 12-byte "
                         "buckets)", hash.len);
    size_t row_bytes = (size_t)vals * 4, n_blob_rows = blob.len / row_bytes, n_buckets = hash.len / 12;
    t->stride = vals + 1;
    t->keys = malloc((n_buckets ? n_buckets : 1) * sizeof *t->keys);
    t->values = malloc((n_buckets ? n_buckets : 1) * vals * sizeof *t->values);
    if (!t->keys || !t->values) return oom(c);
    for (size_t k = 0; k < n_buckets; k++) {
        uint64_t h = tsfb_u64(hash.buf, hash.pos + 12 * k);
        uint32_t idx = tsfb_u32(hash.buf, hash.pos + 12 * k + 8);
        if (h == UINT64_MAX) continue;
        if (idx >= n_blob_rows)
            return tsio_fail(c->err, TS_ERR_PARSE, c->name, 0, 0, "a CTR table bucket names row %u of %zu", idx,
                             n_blob_rows);
        size_t at = blob.pos + (size_t)idx * row_bytes;
        double *row = t->values + t->n_rows * vals;
        if (vals == 2 && (type == TSCB_CTR_BINARIZED_MEAN || type == TSCB_CTR_FLOAT_MEAN)) {
            uint32_t u = tsfb_u32(blob.buf, at);
            float sum;
            memcpy(&sum, &u, sizeof sum);
            if (sum != sum) return tsio_fail(c->err, TS_ERR_PARSE, c->name, 0, 0, "a CTR table's sum is NaN");
            row[0] = sum;
            row[1] = (int32_t)tsfb_u32(blob.buf, at + 4);
        } else {
            for (uint32_t j = 0; j < vals; j++) row[j] = (int32_t)tsfb_u32(blob.buf, at + 4 * (size_t)j);
        }
        t->keys[t->n_rows++] = h;
    }
    return TS_OK;
}

/* The model parts after the core (ModelPartIds): CatBoost's static CTR provider
 * ("static_provider_v1": a count, then each table as a u32 size and a FlatBuffers
 * TCtrValueTable), read when the model has CTR features. */
static ts_status read_ctr_parts(cbm_ctx *c, const tsfb_table *core, const uint8_t *b, size_t size) {
    if (c->cb.n_ctrs == 0) return TS_OK;
    tsfb_vector ids;
    const char *s = "";
    size_t n = 0;
    if (tsfb_vector_field(core, 3, 4, &ids) < 0) return bad(c, "TModelCore.ModelPartIds");
    if (ids.len == 0 || tsfb_vector_string(&ids, 0, &s, &n) < 0 || n != 18 || memcmp(s, "static_provider_v1", 18))
        return tsio_fail(c->err, TS_ERR_UNSUPPORTED, c->name, 0, 0,
                         "the model has CTR features but its first model part is not CatBoost's static CTR provider "
                         "(static_provider_v1)");
    size_t at = 0;
    if (size < 4) return tsio_fail(c->err, TS_ERR_PARSE, c->name, 0, 0, "truncated model: no CTR tables");
    uint64_t count = tsfb_u32(b, 0);
    at = 4;
    if (count == 0xffffffffu) {
        if (size < 12) return tsio_fail(c->err, TS_ERR_PARSE, c->name, 0, 0, "truncated model: no CTR tables");
        count = tsfb_u64(b, 4);
        at = 12;
    }
    if (count > (size - at) / 4)
        return tsio_fail(c->err, TS_ERR_PARSE, c->name, 0, 0, "truncated model: %llu CTR tables in %zu bytes",
                         (unsigned long long)count, size - at);
    c->cb.tables = calloc(count ? count : 1, sizeof *c->cb.tables);
    if (!c->cb.tables) return oom(c);
    for (uint64_t i = 0; i < count; i++) {
        if (size - at < 4) return tsio_fail(c->err, TS_ERR_PARSE, c->name, 0, 0, "truncated model: CTR table %llu",
                                            (unsigned long long)i);
        size_t len = tsfb_u32(b, at);
        at += 4;
        if (len > size - at)
            return tsio_fail(c->err, TS_ERR_PARSE, c->name, 0, 0, "truncated model: CTR table %llu is %zu bytes, %zu "
                             "remain", (unsigned long long)i, len, size - at);
        c->cb.n_tables++;
        TS_TRY(read_ctr_table(c, b + at, len, &c->cb.tables[i]));
        at += len;
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

/* From the InfoMap's JSON values, when it has them: the loss function's name ("params")
 * and the lengths of class_names and class_to_label ("class_params"). */
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
        } else if (kn == 12 && !memcmp(k, "class_params", 12)) {
            tsj_parser p;
            tsj_init(&p, val, vn, 0, c->name, NULL);
            tscb_class_params(&p, &c->cb.n_class_names, &c->cb.n_class_labels);
        }
    }
}

static ts_status read_core(cbm_ctx *c, const uint8_t *buf, size_t size, const uint8_t *parts, size_t parts_size) {
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
    TS_TRY(read_ctr_features(c, &trees));
    TS_TRY(read_ctr_parts(c, &core, parts, parts_size));
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
    ts_status st = read_core(&c, b + at, (size_t)core, b + at + core, size - at - (size_t)core);
    if (st == TS_OK) st = tscb_build(&c.cb, TS_FORMAT_CATBOOST, name, out, err);
    tscb_model_clear(&c.cb);
    return st;
}

int tsio_is_catboost_cbm(const char *data, size_t size) { return size >= 4 && memcmp(data, CBM_MAGIC, 4) == 0; }
