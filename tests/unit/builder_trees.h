/* builder_trees.h: the unit tests' builder trees: ts_tree_arrays filled from plain arrays, and forests of complete binary trees. */
#ifndef TS_TESTS_BUILDER_TREES_H
#define TS_TESTS_BUILDER_TREES_H

#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "treescore.h"

/* A tree of n nodes: children (-1 at leaves), features, thresholds and leaf values; every
 * other field at ts_tree_arrays_init's defaults (LE, float32 input, one value per node). */
static inline ts_tree_arrays tb_arrays(uint32_t n, const int64_t *left, const int64_t *right, const int64_t *feature,
                                       const double *threshold, const double *values) {
    ts_tree_arrays a;
    ts_tree_arrays_init(&a);
    a.n_nodes = n;
    a.children_left = left;
    a.children_right = right;
    a.feature = feature;
    a.threshold = threshold;
    a.values = values;
    return a;
}

/* The same tree's nodes tested per `compares`, with one category set of one word. */
static inline void tb_one_category_set(ts_tree_arrays *a, const uint8_t *compares, const int64_t *category_set,
                                       const uint32_t *words) {
    a->compares = compares;
    a->category_set = category_set;
    a->category_words = words;
    a->n_category_sets = 1;
    a->category_set_words = 1;
}

/* n_trees complete binary trees of n_internal internal nodes (2 n_internal + 1 nodes)
 * on n_features features, thresholds in [0, 10) by tenths and leaf values in [0, 1),
 * drawn from seed. NULL (and a failed check) on error. */
static inline ts_model *tb_complete_forest(uint32_t n_trees, uint32_t n_internal, uint32_t n_features, uint32_t seed) {
    const uint32_t n = 2 * n_internal + 1;
    int64_t *L = malloc(n * sizeof *L), *R = malloc(n * sizeof *R), *F = malloc(n * sizeof *F);
    double *T = malloc(n * sizeof *T), *V = malloc(n * sizeof *V);
    ts_model_builder *b = NULL;
    ts_model *m = NULL;
    ts_error err;
    CHECK(L && R && F && T && V);
    CHECK_STATUS(ts_model_builder_create(n_features, 1, &b, &err), TS_OK);
    for (uint32_t t = 0; t < n_trees && b && L && R && F && T && V; t++) {
        for (uint32_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            L[i] = i < n_internal ? (int64_t)(2 * i + 1) : -1;
            R[i] = i < n_internal ? (int64_t)(2 * i + 2) : -1;
            F[i] = (seed >> 8) % n_features;
            T[i] = (double)((seed >> 16) % 100) / 10.0;
            V[i] = (double)((seed >> 4) % 1000) / 1000.0;
        }
        ts_tree_arrays a = tb_arrays(n, L, R, F, T, V);
        CHECK_STATUS(ts_model_builder_add_tree(b, &a, &err), TS_OK);
    }
    if (b) CHECK_STATUS(ts_model_builder_finish(b, &m, &err), TS_OK);
    ts_model_builder_free(b);
    free(L), free(R), free(F), free(T), free(V);
    return m;
}

#endif /* TS_TESTS_BUILDER_TREES_H */
