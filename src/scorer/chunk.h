/* chunk.h: the chunk function that scores a slice of a batch with one engine on the thread's scratch. */
#ifndef TS_SCORER_CHUNK_H
#define TS_SCORER_CHUNK_H

#include <stddef.h>

#include "engines/engine.h"
#include "platform/scratch.h"

/*
 * A chunk's scratch, laid out the same way on every input path (float rows, double
 * rows, several outputs, expanded rows, one row split across threads): the engine's
 * scratch first (engine_bytes; `engine` is NULL when that is 0), then n_parts parts of
 * part_bytes[i] bytes, part i at part[i], each starting on a 64-byte boundary, all in
 * the running thread's scratch buffer (platform/scratch.h: it grows and never moves
 * what it holds below the size asked, so a chunk function run later on the same
 * thread with the same engine_bytes finds the engine's part where it was, and the
 * parts after it untouched). TS_ERR_NO_MEMORY when the buffer cannot grow; nothing is
 * asked of it when everything is 0 bytes.
 */
#define TSP_CHUNK_PARTS 4

typedef struct tsp_chunk_mem {
    void *engine;
    void *part[TSP_CHUNK_PARTS];
} tsp_chunk_mem;

static inline size_t tsp_align64(size_t bytes) { return (bytes + 63) & ~(size_t)63; }

static inline ts_status tsp_chunk_scratch(size_t engine_bytes, const size_t *part_bytes, unsigned n_parts,
                                          tsp_chunk_mem *mem) {
    size_t off[TSP_CHUNK_PARTS], total = engine_bytes;
    for (unsigned i = 0; i < n_parts; i++) {
        off[i] = tsp_align64(total);
        total = off[i] + part_bytes[i];
    }
    char *base = total ? tsr_scratch(total) : NULL;
    if (total && !base) return TS_ERR_NO_MEMORY;
    mem->engine = engine_bytes ? base : NULL;
    for (unsigned i = 0; i < n_parts; i++) mem->part[i] = base ? base + off[i] : NULL;
    return TS_OK;
}

/* A batch of float rows handed to tsr_parallel_for (platform/pool.h) with
 * tsp_score_chunk as the chunk function: rows [begin, end) of x (stride floats apart)
 * are scored by the engine into out[begin, end), on the running thread's scratch
 * (platform/scratch.h; scratch_bytes, the engine's layout). TS_ERR_NO_MEMORY when the
 * scratch cannot grow. The scorer's batches and the planner's timed calls both go
 * through it. */
typedef struct tsp_score_job {
    const tse_engine *engine;
    const void *state;
    size_t scratch_bytes;
    const float *x;
    size_t stride;
    double *out;
} tsp_score_job;

ts_status tsp_score_chunk(void *ctx, size_t begin, size_t end);

/*
 * One row's trees split across threads (engines with tree_values, engine.h): the tree
 * groups, cut into parts (about four per thread), go to up to n_threads threads of the
 * pool (platform/pool.h), each writing the contributions of its trees into one array of
 * n_trees doubles, and the parts are added in tree order as they come in (by one thread
 * at a time, whichever has just written a part; the calling thread adds what is left):
 * *out = ((base + v[0]) + v[1]) + ... + v[n-1], the very additions, in the very order,
 * that the engine's score makes (engine.h: every engine's score is base + the sum over
 * trees in tree order), so the bits are the same for every thread count and every cut.
 * Partial sums per thread added afterwards would not be (double addition is not
 * associative). The array lives at the end of the calling thread's scratch buffer,
 * after the engine scratch its own chunks use (tsr_scratch never shrinks, so the
 * chunk's tsr_scratch(scratch_bytes) returns the same buffer without touching the
 * array). TS_ERR_NO_MEMORY when the scratch cannot grow.
 */
ts_status tsp_score_split(const tse_engine *e, const void *state, const tse_layout *layout, double base,
                          const float *row, unsigned n_threads, double *out);

/* The bytes of the calling thread's scratch buffer (platform/scratch.h) that
 * tsp_score_split uses, from its start: a caller may keep its own data past them. */
size_t tsp_split_scratch_bytes(const tse_engine *e, const void *state, const tse_layout *layout);

/* 1 when the engine can split one row's trees into at least two groups. */
int tsp_can_split(const tse_engine *e, const void *state);

#endif /* TS_SCORER_CHUNK_H */
