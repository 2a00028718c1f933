/* feature_map.c: ts_model_map_features (feature names to data columns) and ts_model_set_base_score. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "model/forest.h"

/* A read-only open-addressing hash of the caller's names: slot holds column + 1 (0 =
 * empty); n_slots is a power of two >= 2 * the names; the first of equal names is
 * indexed, and again[c] is the column + 1 of the next one named as column c (0: none),
 * so that a name the model reads given to two columns is refused, never guessed. */
typedef struct name_index {
    const char *const *names;
    uint32_t *slots;
    uint32_t *again;
    size_t n_slots;
} name_index;

static uint64_t fnv1a(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int index_build(name_index *ix, const char *const *names, uint32_t n) {
    size_t n_slots = 16;
    while (n_slots < 2 * (size_t)n) n_slots *= 2;
    ix->names = names;
    ix->n_slots = n_slots;
    ix->slots = calloc(n_slots, sizeof *ix->slots);
    ix->again = calloc((size_t)n + 1, sizeof *ix->again);
    if (!ix->slots || !ix->again) return -1;
    for (uint32_t c = 0; c < n; c++) {
        size_t j = (size_t)fnv1a(names[c]) & (n_slots - 1);
        int dup = 0;
        for (; ix->slots[j]; j = (j + 1) & (n_slots - 1))
            if (strcmp(names[ix->slots[j] - 1], names[c]) == 0) {
                dup = 1;
                if (!ix->again[ix->slots[j] - 1]) ix->again[ix->slots[j] - 1] = c + 1;
                break;
            }
        if (!dup) ix->slots[j] = c + 1;
    }
    return 0;
}

/* Column of `name`, or -1. */
static long long index_find(const name_index *ix, const char *name) {
    size_t j = (size_t)fnv1a(name) & (ix->n_slots - 1);
    for (; ix->slots[j]; j = (j + 1) & (ix->n_slots - 1))
        if (strcmp(ix->names[ix->slots[j] - 1], name) == 0) return (long long)ix->slots[j] - 1;
    return -1;
}

/* Marks the features some split (or category set) reads. used: n_features bytes. */
static void mark_used(const ts_model *m, unsigned char *used) {
    for (uint32_t t = 0; t < m->n_trees; t++)
        for (uint32_t i = 0; i < m->trees[t].n_nodes; i++)
            if (!(m->trees[t].nodes[i].flags & TSM_DERIVED)) used[m->trees[t].nodes[i].feature] = 1;
    for (uint32_t k = 0; k < m->n_ctrtabs; k++) /* the columns derived columns read */
        for (uint32_t e = 0; e < m->ctrtabs[k].n_elems; e++)
            if (m->ctrtabs[k].elems[e].column < m->n_features) used[m->ctrtabs[k].elems[e].column] = 1;
    for (uint32_t k = 0; k < m->n_catsets; k++)
        if (m->catsets[k].feature < m->n_features) used[m->catsets[k].feature] = 1;
    for (uint32_t k = 0; k < m->n_catmaps; k++) /* a hashed categorical column is read even when unsplit */
        if (m->catmaps[k].feature < m->n_features) used[m->catmaps[k].feature] = 1;
}

/* remap[f] = the column of used feature f; fails naming (the first few) absent names,
 * and when two used features of the model share a name (both would read its one column).
 * owner: n_names zeroed slots, the feature + 1 that took each column. */
static ts_status build_remap(const ts_model *m, const name_index *ix, uint32_t n_names, const unsigned char *used,
                             uint32_t *remap, uint32_t *owner, ts_error *err) {
    char list[600];
    size_t len = 0, missing = 0;
    list[0] = '\0';
    for (uint32_t f = 0; f < m->n_features; f++) {
        if (!used[f]) continue;
        const char *name = f < m->n_feature_names ? m->feature_names[f] : NULL;
        long long c = name ? index_find(ix, name) : -1;
        if (c >= 0 && ix->again[c])
            return ts_fail(err, TS_ERR_SHAPE, "feature name '%.60s' of the model is given to columns %lld and %u: "
                           "which one it reads is ambiguous", name, c, ix->again[c] - 1);
        if (c >= 0 && owner[c])
            return ts_fail(err, TS_ERR_SHAPE, "the model names its features %u and %u both '%.60s': mapped by name, "
                           "both would read column %lld", owner[c] - 1, f, name, c);
        if (c >= 0) {
            remap[f] = (uint32_t)c;
            owner[c] = f + 1;
            continue;
        }
        if (missing++ < 8 && len < sizeof list - 80) {
            int k = snprintf(list + len, sizeof list - len, "%s'%.60s'", len ? ", " : "", name ? name : "?");
            if (k > 0) len += (size_t)k < sizeof list - len ? (size_t)k : sizeof list - len - 1;
        }
    }
    if (missing)
        return ts_fail(err, TS_ERR_SHAPE, "%zu feature name%s of the model %s not among the %u given names: %s%s",
                       missing, missing == 1 ? "" : "s", missing == 1 ? "is" : "are", n_names,
                       list, missing > 8 ? ", ..." : "");
    return TS_OK;
}

/* Copies of names[0..n) (NULL on failure, nothing leaked). */
static char **copy_names(const char *const *names, uint32_t n) {
    char **out = calloc(n ? n : 1, sizeof *out);
    if (!out) return NULL;
    for (uint32_t i = 0; i < n; i++) {
        size_t k = strlen(names[i]);
        out[i] = malloc(k + 1);
        if (!out[i]) {
            for (uint32_t j = 0; j < i; j++) free(out[j]);
            free(out);
            return NULL;
        }
        memcpy(out[i], names[i], k + 1);
    }
    return out;
}

/* The hash of a category set, as tsm_model_add_catset computes it (forest.c's
 * catset_hash: FNV-1a over feature, rule, flags, n_words, then the words). */
static uint32_t catset_rehash(const ts_model *m, const tsm_catset *c) {
    uint32_t h = 2166136261u, head[4] = {c->feature, c->rule, c->flags, c->n_words};
    for (int i = 0; i < 4; i++) h = (h ^ head[i]) * 16777619u;
    for (uint32_t i = 0; i < c->n_words; i++) h = (h ^ m->cat_words[c->word0 + i]) * 16777619u;
    return h;
}

/* Moves each used feature to its column (in the nodes and in the category sets, whose
 * feature is their nodes') and renames the features after the columns. */
static void apply(ts_model *m, const uint32_t *remap, char **names, uint32_t n_names) {
    for (uint32_t t = 0; t < m->n_trees; t++)
        for (uint32_t i = 0; i < m->trees[t].n_nodes; i++) {
            tsm_node *nd = &m->trees[t].nodes[i];
            if (!(nd->flags & TSM_DERIVED)) nd->feature = remap[nd->feature];
        }
    for (uint32_t k = 0; k < m->n_ctrtabs; k++)
        for (uint32_t e = 0; e < m->ctrtabs[k].n_elems; e++) {
            tsm_elem *x = &m->ctrtabs[k].elems[e];
            if (x->column < m->n_features) x->column = remap[x->column];
        }
    for (uint32_t k = 0; k < m->n_catsets; k++) {
        tsm_catset *c = &m->catsets[k];
        if (c->feature < m->n_features) c->feature = remap[c->feature];
        c->hash = catset_rehash(m, c);
    }
    tsm_catsets_changed(m);
    for (uint32_t k = 0; k < m->n_catmaps; k++)
        if (m->catmaps[k].feature < m->n_features) m->catmaps[k].feature = remap[m->catmaps[k].feature];
    for (uint32_t i = 0; i < m->n_feature_names; i++) free(m->feature_names[i]);
    free(m->feature_names);
    m->feature_names = names;
    m->n_feature_names = n_names;
    /* Rows now follow the caller's columns: the file's declared count no longer applies. */
    m->n_features = n_names;
    m->n_features_declared = 0;
}

ts_status ts_model_map_features(ts_model *m, const char *const *names, uint32_t n_names, ts_error *err) {
    if (!m) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "ts_model_map_features: model is NULL");
    if (!names && n_names) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "ts_model_map_features: names is NULL");
    if (n_names > TSM_MAX_FEATURES)
        return ts_fail(err, TS_ERR_LIMIT, "ts_model_map_features: %u names, more than the limit %u", n_names,
                       TSM_MAX_FEATURES);
    for (uint32_t i = 0; i < n_names; i++)
        if (!names[i]) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "ts_model_map_features: names[%u] is NULL", i);
    if (m->n_feature_names == 0)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT,
                       "the model has no feature names to map (its splits give column numbers)");
    name_index ix = {0};
    unsigned char *used = calloc((size_t)m->n_features + 1, 1);
    uint32_t *remap = calloc((size_t)m->n_features + 1, sizeof *remap);
    uint32_t *owner = calloc((size_t)n_names + 1, sizeof *owner);
    char **copies = NULL;
    ts_status st = TS_OK;
    if (!used || !remap || !owner || index_build(&ix, names, n_names) != 0)
        st = ts_fail(err, TS_ERR_NO_MEMORY, "out of memory");
    if (st == TS_OK) {
        mark_used(m, used);
        st = build_remap(m, &ix, n_names, used, remap, owner, err);
    }
    if (st == TS_OK && !(copies = copy_names(names, n_names))) st = ts_fail(err, TS_ERR_NO_MEMORY, "out of memory");
    if (st == TS_OK) apply(m, remap, copies, n_names);
    free(ix.slots);
    free(ix.again);
    free(used);
    free(remap);
    free(owner);
    return st;
}

ts_status ts_model_set_base_score(ts_model *m, double base_score, ts_error *err) {
    if (!m) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "ts_model_set_base_score: model is NULL");
    if (!isfinite(base_score))
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "ts_model_set_base_score: the base score %g is not finite",
                       base_score);
    m->base_score = base_score;
    for (uint32_t k = 0; m->output_base && k < m->n_outputs; k++) m->output_base[k] = base_score; /* every output */
    return TS_OK;
}

/* ---- columns the model reads ------------------------------------------------------------ */

ts_status tsm_used_features(const ts_model *m, uint32_t **ids, uint32_t *n, ts_error *err) {
    *ids = NULL;
    *n = 0;
    size_t words = (size_t)m->n_features / 64 + 1, count = 0;
    uint64_t *bits = calloc(words, sizeof *bits);
    if (!bits) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory listing the model's features");
    for (uint32_t t = 0; t < m->n_trees; t++)
        for (uint32_t i = 0; i < m->trees[t].n_nodes; i++) {
            uint32_t f = m->trees[t].nodes[i].feature;
            if (f < m->n_features && !(m->trees[t].nodes[i].flags & TSM_DERIVED)) bits[f / 64] |= (uint64_t)1 << (f % 64);
        }
    for (uint32_t k = 0; k < m->n_ctrtabs; k++) /* the columns derived columns read */
        for (uint32_t e = 0; e < m->ctrtabs[k].n_elems; e++) {
            uint32_t f = m->ctrtabs[k].elems[e].column;
            if (f < m->n_features) bits[f / 64] |= (uint64_t)1 << (f % 64);
        }
    for (uint32_t k = 0; k < m->n_catsets; k++)
        if (m->catsets[k].feature < m->n_features)
            bits[m->catsets[k].feature / 64] |= (uint64_t)1 << (m->catsets[k].feature % 64);
    for (size_t w = 0; w < words; w++) count += (size_t)__builtin_popcountll(bits[w]);
    uint32_t *out = malloc((count ? count : 1) * sizeof *out);
    if (!out) {
        free(bits);
        return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory listing the model's features");
    }
    size_t j = 0;
    for (size_t w = 0; w < words; w++)
        for (uint64_t b = bits[w]; b; b &= b - 1) out[j++] = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(b));
    free(bits);
    *ids = out;
    *n = (uint32_t)count;
    return TS_OK;
}

int tsm_features_are_sparse(uint32_t n_features, uint32_t n_used) {
    return (uint64_t)n_features > 4 * (uint64_t)n_used + 1024;
}

uint32_t tsm_column_rank(const uint32_t *ids, uint32_t n, uint32_t f) {
    uint32_t lo = 0, hi = n;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (ids[mid] <= f) lo = mid;
        else hi = mid;
    }
    return lo;
}

static uint32_t renumbered(const uint32_t *ids, uint32_t n, uint32_t first_derived, uint32_t f) {
    return f >= first_derived ? n + (f - first_derived) : tsm_column_rank(ids, n, f);
}

void tsm_model_renumber(ts_model *m, const uint32_t *ids, uint32_t n, uint32_t first_derived) {
    for (uint32_t t = 0; t < m->n_trees; t++)
        for (uint32_t i = 0; i < m->trees[t].n_nodes; i++) {
            tsm_node *nd = &m->trees[t].nodes[i];
            if (!(nd->flags & TSM_DERIVED)) nd->feature = renumbered(ids, n, first_derived, nd->feature);
        }
    for (uint32_t k = 0; k < m->n_catsets; k++) {
        tsm_catset *c = &m->catsets[k];
        c->feature = renumbered(ids, n, first_derived, c->feature);
        c->hash = catset_rehash(m, c);
    }
    tsm_catsets_changed(m);
    if (m->n_feature_names) { /* one name per column: keep the names of the columns kept */
        char **names = m->n_feature_names == m->n_features ? malloc((n ? n : 1) * sizeof *names) : NULL;
        for (uint32_t j = 0; names && j < n; j++) {
            names[j] = m->feature_names[ids[j]];
            m->feature_names[ids[j]] = NULL;
        }
        for (uint32_t i = 0; i < m->n_feature_names; i++) free(m->feature_names[i]);
        free(m->feature_names);
        m->feature_names = names;
        m->n_feature_names = names ? n : 0;
    }
    m->n_features = n + (m->n_features > first_derived ? m->n_features - first_derived : 0);
    m->n_features_declared = 0;
}
