/* chunk.h: the chunk function that scores a slice of a batch with one engine on the thread's scratch. */
#ifndef TS_SCORER_CHUNK_H
#define TS_SCORER_CHUNK_H

#include <stddef.h>

#include "engines/engine.h"

/* A batch of float rows handed to tsr_parallel_for (platform/pool.h) with
 * tsr_score_chunk as the chunk function: rows [begin, end) of x (stride floats apart)
 * are scored by the engine into out[begin, end), on the running thread's scratch
 * (platform/scratch.h; scratch_bytes, the engine's layout). TS_ERR_NO_MEMORY when the
 * scratch cannot grow. The scorer's batches and the planner's timed calls both go
 * through it. */
typedef struct tsr_score_job {
    const tse_engine *engine;
    const void *state;
    size_t scratch_bytes;
    const float *x;
    size_t stride;
    double *out;
} tsr_score_job;

ts_status tsr_score_chunk(void *ctx, size_t begin, size_t end);

/*
 * One row's trees split across threads (engines with tree_values, engine.h): the tree
 * groups go to up to n_threads threads of the pool (platform/pool.h), each writing the
 * contributions of its trees into one array of n_trees doubles, and the calling thread
 * then adds them in tree order: *out = ((base + v[0]) + v[1]) + ... + v[n-1], the very
 * additions, in the very order, that the engine's score makes (engine.h: every engine's
 * score is base + the sum over trees in tree order), so the bits are the same for every
 * thread count and every cut. Partial sums per thread added afterwards would not be
 * (double addition is not associative). The array lives at the end of the calling
 * thread's scratch buffer, after the engine scratch its own chunks use (tsr_scratch
 * never shrinks, so the chunk's tsr_scratch(scratch_bytes) returns the same buffer
 * without touching the array). TS_ERR_NO_MEMORY when the scratch cannot grow.
 */
ts_status tsr_score_split(const tse_engine *e, const void *state, const tse_layout *layout, double base,
                          const float *row, unsigned n_threads, double *out);

/* 1 when the engine can split one row's trees into at least two groups. */
int tsr_can_split(const tse_engine *e, const void *state);

#endif /* TS_SCORER_CHUNK_H */
