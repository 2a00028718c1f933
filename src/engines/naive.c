/* naive.c: node-by-node traversal of each tree (Struct+ in the papers), the readable reference engine. */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "engines/engine.h"

/*
 * Layout: every tree's nodes copied into one array (child references stay relative to
 * the tree, as in the IR), leaf values pre-multiplied by the tree weight (the same double
 * product the score definition uses) in one array, and per tree the offsets of both.
 */
typedef struct naive_tree {
    uint32_t node_offset;
    uint32_t leaf_offset;
    uint32_t n_nodes;
} naive_tree;

typedef struct naive_state {
    double base_score;
    uint32_t n_trees;
    naive_tree *trees;
    tsm_node *nodes;
    double *leaves;
} naive_state;

static void naive_free(void *p) {
    naive_state *s = p;
    if (!s) return;
    free(s->trees);
    free(s->nodes);
    free(s->leaves);
    free(s);
}

static ts_status naive_prepare(const ts_model *m, const tse_config *cfg, void **out, tse_layout *layout,
                               ts_error *err) {
    (void)cfg;
    uint64_t n_nodes = 0, n_leaves = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        n_nodes += m->trees[t].n_nodes;
        n_leaves += m->trees[t].n_leaves;
    }
    if (n_nodes > UINT32_MAX || n_leaves > UINT32_MAX)
        return ts_fail(err, TS_ERR_LIMIT, "naive: the model has more than 2^32 nodes");
    naive_state *s = calloc(1, sizeof *s);
    if (!s) return ts_fail(err, TS_ERR_NO_MEMORY, "naive: out of memory");
    s->base_score = m->base_score;
    s->n_trees = m->n_trees;
    s->trees = malloc(((size_t)m->n_trees + 1) * sizeof *s->trees);
    s->nodes = malloc(((size_t)n_nodes + 1) * sizeof *s->nodes);
    s->leaves = malloc(((size_t)n_leaves + 1) * sizeof *s->leaves);
    if (!s->trees || !s->nodes || !s->leaves) {
        naive_free(s);
        return ts_fail(err, TS_ERR_NO_MEMORY, "naive: out of memory");
    }
    uint32_t node_off = 0, leaf_off = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        const tsm_tree *tr = &m->trees[t];
        s->trees[t] = (naive_tree){node_off, leaf_off, tr->n_nodes};
        if (tr->n_nodes) memcpy(s->nodes + node_off, tr->nodes, tr->n_nodes * sizeof *tr->nodes);
        for (uint32_t l = 0; l < tr->n_leaves; l++) s->leaves[leaf_off + l] = tr->weight * tr->leaf_values[l];
        node_off += tr->n_nodes;
        leaf_off += tr->n_leaves;
    }
    /* A thread of its own pays from about 4 million node visits (~1 ms). */
    uint64_t per_row = n_nodes / 4 + 1;
    *layout = (tse_layout){TS_ISA_SCALAR, 0, 0, 0, (size_t)((1u << 22) / per_row + 1), 0};
    *out = s;
    return TS_OK;
}

/* Tree t's exit leaf value for one row: the walk from the root, node by node. */
static inline double exit_value(const naive_state *s, uint32_t t, const float *row) {
    const naive_tree *tr = &s->trees[t];
    const tsm_node *nodes = s->nodes + tr->node_offset;
    int32_t c = tr->n_nodes ? 0 : -1;
    while (c >= 0) {
        const tsm_node *n = &nodes[c];
        c = tsm_node_goes_left(n, row[n->feature]) ? n->left : n->right;
    }
    return s->leaves[tr->leaf_offset + (uint32_t)~c];
}

static void naive_score(const void *p, const float *x, size_t n_rows, size_t stride, double *out, void *scratch) {
    const naive_state *s = p;
    (void)scratch;
    for (size_t r = 0; r < n_rows; r++) {
        const float *row = x + r * stride;
        double score = s->base_score;
        for (uint32_t t = 0; t < s->n_trees; t++) score += exit_value(s, t, row);
        out[r] = score;
    }
}

/* Every tree is a group of its own. */
static uint32_t naive_groups(const void *p) { return ((const naive_state *)p)->n_trees; }

static uint32_t naive_group_first(const void *p, uint32_t g) {
    const naive_state *s = p;
    return g < s->n_trees ? g : s->n_trees;
}

static void naive_tree_values(const void *p, const float *row, uint32_t g0, uint32_t g1, double *vals,
                              void *scratch) {
    const naive_state *s = p;
    (void)scratch;
    for (uint32_t t = g0; t < g1 && t < s->n_trees; t++) vals[t - g0] = exit_value(s, t, row);
}

const tse_engine tse_engine_naive = {
    .id = TS_ENGINE_NAIVE, .name = "naive", .prepare = naive_prepare, .score = naive_score, .free = naive_free,
    .plan_candidate = tse_plan_plain_walks, .tree_groups = naive_groups,
    .tree_group_first = naive_group_first, .tree_values = naive_tree_values,
};
