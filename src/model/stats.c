/* stats.c: statistics of a forest on data (QuickScorer's false nodes per document and tree). */
#include "model/stats.h"

#include "model/derived.h"

/* The row's column of the model's column f: f itself, or its place in cols (the columns
 * the model reads, f among them). */
static uint32_t column_of(const uint32_t *cols, uint32_t n_cols, uint32_t f) {
    return cols ? tsm_column_rank(cols, n_cols, f) : f;
}

/* False nodes of one tree for one row: every internal node, in any order (categorical
 * nodes by their set's rule). */
static uint64_t false_nodes_of_tree(const ts_model *m, const tsm_tree *t, const float *row, const uint32_t *cols,
                                    uint32_t n_cols) {
    uint64_t n = 0;
    for (uint32_t i = 0; i < t->n_nodes; i++) {
        const tsm_node *nd = &t->nodes[i];
        if (nd->flags & TSM_DERIVED) { /* its value from the row (cols: not gathered; counted as true) */
            float v = 0.0f;
            if (!cols) {
                const tsm_ctrtab *tab = &m->ctrtabs[m->derived[nd->feature].tab];
                v = m->derived[nd->feature].values[tsm_ctrtab_row(tab, m->catmaps, row)];
            }
            n += !tsm_node_goes_left(nd, v);
        } else if (nd->flags & TSM_CATEGORICAL) {
            const tsm_catset *c = &m->catsets[(uint32_t)nd->threshold];
            n += !tsm_catset_goes_left(m, c, (double)row[column_of(cols, n_cols, nd->feature)]);
        } else {
            n += !tsm_node_goes_left(nd, row[column_of(cols, n_cols, nd->feature)]);
        }
    }
    return n;
}

double tsm_false_nodes_per_tree(const ts_model *m, const float *x, size_t n_rows, size_t row_stride,
                                const uint32_t *cols, uint32_t n_cols) {
    if (!m || !x || n_rows == 0 || m->n_trees == 0) return 0.0;
    uint64_t total = 0;
    for (size_t r = 0; r < n_rows; r++) {
        const float *row = x + r * row_stride;
        for (uint32_t t = 0; t < m->n_trees; t++) total += false_nodes_of_tree(m, &m->trees[t], row, cols, n_cols);
    }
    return (double)total / ((double)n_rows * (double)m->n_trees);
}
