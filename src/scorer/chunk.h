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

#endif /* TS_SCORER_CHUNK_H */
