/* chunk.c: tsp_score_chunk, one engine call over a slice of a batch on this thread's scratch. */
#include "scorer/chunk.h"

#include "common/error.h"
#include "platform/pool.h"

ts_status tsp_score_chunk(void *ctx, size_t begin, size_t end) {
    const tsp_score_job *j = ctx;
    tsp_chunk_mem mem;
    TS_TRY(tsp_chunk_scratch(j->scratch_bytes, NULL, 0, &mem));
    j->engine->score(j->state, j->x + begin * j->stride, end - begin, j->stride, j->out + begin, mem.engine);
    return TS_OK;
}

typedef struct split_job {
    const tse_engine *engine;
    const void *state;
    size_t scratch_bytes;
    const float *row;
    double *vals;       /* indexed by tree */
} split_job;

/* Tree groups [g0, g1) of the row, on this thread's scratch. */
static ts_status split_chunk(void *ctx, size_t g0, size_t g1) {
    const split_job *j = ctx;
    tsp_chunk_mem mem;
    TS_TRY(tsp_chunk_scratch(j->scratch_bytes, NULL, 0, &mem));
    uint32_t t0 = j->engine->tree_group_first(j->state, (uint32_t)g0);
    j->engine->tree_values(j->state, j->row, (uint32_t)g0, (uint32_t)g1, j->vals + t0, mem.engine);
    return TS_OK;
}

int tsp_can_split(const tse_engine *e, const void *state) {
    return e->tree_values && e->tree_group_first && e->tree_groups && e->tree_groups(state) >= 2;
}

ts_status tsp_score_split(const tse_engine *e, const void *state, const tse_layout *layout, double base,
                          const float *row, unsigned n_threads, double *out) {
    uint32_t groups = e->tree_groups(state), n_trees = e->tree_group_first(state, groups);
    /* [engine scratch (the calling thread's own chunks) | the row's n_trees values] */
    const size_t vals_bytes = (size_t)n_trees * sizeof(double) + 1;
    tsp_chunk_mem mem;
    TS_TRY(tsp_chunk_scratch(layout->scratch_bytes, &vals_bytes, 1, &mem));
    split_job j = {e, state, layout->scratch_bytes, row, mem.part[0]};
    /* About four chunks per thread: a helper preempted by another process (a busy
     * machine) then holds up an eighth of the row on two threads, not half of it. */
    size_t per = (size_t)(n_threads ? n_threads : 1) * 4, grain = (groups + per - 1) / per;
    ts_status st = tsr_parallel_for(n_threads, groups, grain, split_chunk, &j);
    if (st != TS_OK) return st;
    double score = base;
    for (uint32_t t = 0; t < n_trees; t++) score += j.vals[t];
    *out = score;
    return TS_OK;
}
