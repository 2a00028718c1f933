/* random_forest.h: random forests and rows with every edge case of the split predicate, shared by the engine tests (static functions, include once per test). */
#ifndef TS_TEST_RANDOM_FOREST_H
#define TS_TEST_RANDOM_FOREST_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "model/forest.h"

/*
 * Trees split leaf slots at random (or, for "deep" trees, nearly always the newest slot,
 * which makes long unbalanced chains), take thresholds from a small grid that rows hit
 * exactly (with -0.0, +-inf, denormals and FLT_MAX), route missing values left or right
 * at random, and may treat zero as missing on the features below N_ZERO_FEATURES; the
 * internal nodes (root kept at 0) and the leaves are then numbered in a shuffled order,
 * which tsm_model_add_tree must bring to canonical form. Rows mix NaN, grid values and
 * their float neighbours, tiny values around LightGBM's zero range, and +-inf.
 */

/* xorshift64*: deterministic, independent of the C library's rand(). */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static inline uint64_t rnd(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}
static inline uint32_t rnd_below(uint32_t n) { return (uint32_t)(rnd() % n); }

/* Features of the forests being built (wide keys need many). Features below
 * N_ZERO_FEATURES may have zero-is-missing nodes. */
static uint32_t n_features = 12;
#define N_ZERO_FEATURES 3

/* Thresholds come from a small grid (with -0.0 and +-inf), so rows often hit them. */
static const float grid[] = {-INFINITY, -3.5f, -1.0f, -1.0000001f, -1e-30f, -0.0f, 0.0f,          1e-30f,
                             0.25f,     0.5f,  1.0f,  2.0f,        7.0f,    100.0f, 3.4028235e38f, 1e-40f,
                             INFINITY};
#define GRID_N (sizeof grid / sizeof grid[0])

static inline float random_threshold(uint32_t feature) {
    float t = grid[rnd_below(GRID_N)];
    /* A zero-is-missing feature has no threshold inside [-Z, Z) (tsm_model_finish). */
    if (feature < N_ZERO_FEATURES && t >= -TSM_ZERO_RANGE && t < TSM_ZERO_RANGE) t = TSM_ZERO_RANGE;
    return t;
}

static inline float random_value(void) {
    switch (rnd_below(8)) {
    case 0: return NAN;
    case 1: return grid[rnd_below(GRID_N)];
    case 2: return nextafterf(grid[rnd_below(GRID_N)], INFINITY);
    case 3: return nextafterf(grid[rnd_below(GRID_N)], -INFINITY);
    case 4: {
        static const float z[] = {0.0f, -0.0f, 1e-36f, -1e-36f, 1e-35f, -1e-35f, 1e-40f, -1e-40f, 1.0000001e-35f};
        return z[rnd_below(sizeof z / sizeof z[0])];
    }
    case 5: return rnd_below(2) ? INFINITY : -INFINITY;
    default: return (float)((double)rnd_below(2000000) / 1000.0 - 1000.0) / 100.0f;
    }
}

static inline void random_node(tsm_node *nd) {
    nd->feature = rnd_below(n_features);
    nd->threshold = random_threshold(nd->feature);
    nd->flags = rnd_below(2) ? TSM_MISSING_LEFT : 0;
    if (nd->feature < N_ZERO_FEATURES && rnd_below(2)) nd->flags |= TSM_ZERO_IS_MISSING;
}

/* One random tree of n_leaves leaves: split random leaf slots (or, when deep, nearly
 * always the newest one, which makes long unbalanced chains), then number the internal
 * nodes (root kept at 0) and the leaves in a shuffled order. */
static inline void random_tree(uint32_t n_leaves, int deep, tsm_node *nodes, double *leaves) {
    uint32_t n_nodes = n_leaves - 1;
    uint32_t *perm_node = malloc((n_nodes + 1) * sizeof *perm_node);
    uint32_t *perm_leaf = malloc(n_leaves * sizeof *perm_leaf);
    int32_t **slots = malloc(n_leaves * sizeof *slots);
    int32_t root_ref = ~0;
    uint32_t n_slots = 1;
    slots[0] = &root_ref;
    for (uint32_t i = 0; i < n_nodes; i++) {
        uint32_t k = deep && rnd_below(10) ? n_slots - 1 - rnd_below(n_slots > 1 ? 2 : 1) : rnd_below(n_slots);
        tsm_node *nd = &nodes[i];
        random_node(nd);
        *slots[k] = (int32_t)i;
        nd->left = ~0;
        nd->right = ~0;
        slots[k] = rnd_below(2) ? &nd->left : &nd->right;
        slots[n_slots++] = slots[k] == &nd->left ? &nd->right : &nd->left;
    }
    for (uint32_t j = 0; j < n_slots; j++) *slots[j] = ~(int32_t)j;
    for (uint32_t j = 0; j < n_leaves; j++) leaves[j] = (double)(int)rnd_below(2000001) / 1024.0 - 976.0;
    for (uint32_t i = 0; i < n_nodes; i++) perm_node[i] = i;
    for (uint32_t i = n_nodes; i > 2; i--) {
        uint32_t j = 1 + rnd_below(i - 1), tmp = perm_node[i - 1];
        perm_node[i - 1] = perm_node[j];
        perm_node[j] = tmp;
    }
    for (uint32_t j = 0; j < n_leaves; j++) perm_leaf[j] = j;
    for (uint32_t j = n_leaves; j > 1; j--) {
        uint32_t k = rnd_below(j), tmp = perm_leaf[j - 1];
        perm_leaf[j - 1] = perm_leaf[k];
        perm_leaf[k] = tmp;
    }
    tsm_node *copy = malloc((n_nodes + 1) * sizeof *copy);
    double *lcopy = malloc(n_leaves * sizeof *lcopy);
    for (uint32_t i = 0; i < n_nodes; i++) copy[i] = nodes[i];
    for (uint32_t j = 0; j < n_leaves; j++) lcopy[j] = leaves[j];
    for (uint32_t i = 0; i < n_nodes; i++) {
        tsm_node nd = copy[i];
        nd.left = nd.left >= 0 ? (int32_t)perm_node[nd.left] : ~(int32_t)perm_leaf[~nd.left];
        nd.right = nd.right >= 0 ? (int32_t)perm_node[nd.right] : ~(int32_t)perm_leaf[~nd.right];
        nodes[perm_node[i]] = nd;
    }
    for (uint32_t j = 0; j < n_leaves; j++) leaves[perm_leaf[j]] = lcopy[j];
    free(copy);
    free(lcopy);
    free(perm_node);
    free(perm_leaf);
    free(slots);
}

/* The end of building a test model: base score 0.5, tsm_model_finish (checked), the
 * node and leaf buffers freed. Returns m. */
static inline ts_model *finish_random_model(ts_model *m, tsm_node *nodes, double *leaves) {
    m->base_score = 0.5;
    ts_error err;
    CHECK_STATUS(tsm_model_finish(m, &err), TS_OK);
    free(nodes);
    free(leaves);
    return m;
}

/* n_trees trees of min..max leaves; every `deep_every`-th tree (0: none) is deep. */
static inline ts_model *random_model(uint32_t n_trees, uint32_t min_leaves, uint32_t max_leaves, uint32_t deep_every) {
    ts_model *m = tsm_model_new(TS_FORMAT_LIGHTGBM);
    tsm_node *nodes = malloc(max_leaves * sizeof *nodes);
    double *leaves = malloc(max_leaves * sizeof *leaves);
    for (uint32_t t = 0; t < n_trees; t++) {
        uint32_t L = min_leaves + rnd_below(max_leaves - min_leaves + 1);
        random_tree(L, deep_every && t % deep_every == 0, nodes, leaves);
        double w = rnd_below(3) == 0 ? 0.1 : 1.0;
        ts_error err;
        CHECK_STATUS(tsm_model_add_tree(m, L - 1, nodes, L, leaves, w, &err), TS_OK);
    }
    return finish_random_model(m, nodes, leaves);
}

static inline double reference_score(const ts_model *m, const float *row) {
    double s = m->base_score;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        const tsm_tree *tr = &m->trees[t];
        s += tr->weight * tr->leaf_values[tsm_tree_exit_leaf(tr, row)];
    }
    return s;
}

#endif /* TS_TEST_RANDOM_FOREST_H */
