/* scratch.h: one growable, 64-byte aligned scratch buffer per thread, for engines' per-call working memory, and the chunk function that scores rows with it. */
#ifndef TS_RUNTIME_SCRATCH_H
#define TS_RUNTIME_SCRATCH_H

#include <stddef.h>

#include "engines/engine.h"

/*
 * tsr_scratch(bytes) returns this thread's buffer, at least `bytes` long and 64-byte
 * aligned, or NULL if it had to grow and the allocation failed. It grows (never
 * shrinks) to the largest size asked for on this thread, so after the first calls
 * scoring allocates nothing. The contents are undefined on return, and the buffer is
 * only valid until this thread's next tsr_scratch call: one user at a time per thread
 * (the scorer takes it once per chunk and hands it to the engine). Freed when the
 * thread exits (pthread key destructor).
 */
void *tsr_scratch(size_t bytes);

/* A batch of float rows handed to tsr_parallel_for (runtime/pool.h) with
 * tsr_score_chunk as the chunk function: rows [begin, end) of x (stride floats apart)
 * are scored by the engine into out[begin, end), on the running thread's scratch
 * (scratch_bytes, the engine's layout). TS_ERR_NO_MEMORY when the scratch cannot grow.
 * The scorer's batches and the planner's timed calls both go through it. */
typedef struct tsr_score_job {
    const tse_engine *engine;
    const void *state;
    size_t scratch_bytes;
    const float *x;
    size_t stride;
    double *out;
} tsr_score_job;

ts_status tsr_score_chunk(void *ctx, size_t begin, size_t end);

#endif /* TS_RUNTIME_SCRATCH_H */
