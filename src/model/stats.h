/* stats.h: statistics of a forest on data (QuickScorer's false nodes per document and tree). */
#ifndef TS_MODEL_STATS_H
#define TS_MODEL_STATS_H

#include <stddef.h>

#include "model/forest.h"

/*
 * A "false node" of a tree for a document is an internal node whose test sends the
 * document RIGHT (tsm_node_goes_left false, missing-value rules included). QuickScorer
 * visits exactly these nodes, all of them, not only the ones on the document's
 * root-to-leaf path; their mean count is the cost measure of Lucchese et al. (SIGIR
 * 2015, Table 3).
 */

/* The mean number of false nodes per document and per tree: every node of every tree
 * is tested for every row (row r at x + r * row_stride, NaN missing), so the cost is
 * n_rows times the model's internal nodes; callers sample the rows of big inputs (a
 * row_stride that skips rows does that). Rows have the model's columns (cols NULL: at
 * least m->n_features readable floats), or only the n_cols columns cols names
 * (ascending, every column a split reads among them: ts_scorer_columns_for's packed
 * rows). One-leaf trees count with 0 false nodes. 0.0 when there are no rows or no
 * trees. */
double tsm_false_nodes_per_tree(const ts_model *m, const float *x, size_t n_rows, size_t row_stride,
                                const uint32_t *cols, uint32_t n_cols);

#endif /* TS_MODEL_STATS_H */
