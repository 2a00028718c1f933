/* engine.h: the one small interface every traversal engine implements. */
#ifndef TS_ENGINES_ENGINE_H
#define TS_ENGINES_ENGINE_H

#include <stddef.h>

#include "model/forest.h"
#include "treescore.h"

/*
 * An engine turns a finished ts_model into its own read-only layout (prepare), scores
 * batches from that layout (score), and frees it. Contract:
 *   - prepare copies what it needs: the model may be freed afterwards;
 *   - score is called concurrently from many threads on one state: it must not write
 *     to the state, take locks, or allocate for n_rows <= TS_NOALLOC_BATCH_ROWS;
 *   - rows have at least model->n_features readable floats (row r at x + r*row_stride);
 *   - out[r] = base_score + sum over trees in tree order of weight*leaf, in double, so
 *     that every engine returns the same bits as tsm_tree_exit_leaf-based reference
 *     scoring.
 */
typedef struct tse_engine {
    ts_engine id;
    const char *name;
    ts_status (*prepare)(const ts_model *model, const ts_scorer_options *opts, void **state, ts_error *err);
    void (*score)(const void *state, const float *x, size_t n_rows, size_t row_stride, double *out);
    void (*free)(void *state);
} tse_engine;

extern const tse_engine tse_engine_naive;
extern const tse_engine tse_engine_qs;

/* The engine with this id, or NULL (TS_ENGINE_AUTO is resolved by the scorer). */
const tse_engine *tse_engine_get(ts_engine id);

#endif /* TS_ENGINES_ENGINE_H */
