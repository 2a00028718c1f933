/* chunk.c: tsr_score_chunk, one engine call over a slice of a batch on this thread's scratch. */
#include "scorer/chunk.h"

#include "platform/pool.h"
#include "platform/scratch.h"

ts_status tsr_score_chunk(void *ctx, size_t begin, size_t end) {
    const tsr_score_job *j = ctx;
    void *scratch = j->scratch_bytes ? tsr_scratch(j->scratch_bytes) : NULL;
    if (j->scratch_bytes && !scratch) return TS_ERR_NO_MEMORY;
    j->engine->score(j->state, j->x + begin * j->stride, end - begin, j->stride, j->out + begin, scratch);
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
    void *scratch = j->scratch_bytes ? tsr_scratch(j->scratch_bytes) : NULL;
    if (j->scratch_bytes && !scratch) return TS_ERR_NO_MEMORY;
    uint32_t t0 = j->engine->tree_group_first(j->state, (uint32_t)g0);
    j->engine->tree_values(j->state, j->row, (uint32_t)g0, (uint32_t)g1, j->vals + t0, scratch);
    return TS_OK;
}

int tsr_can_split(const tse_engine *e, const void *state) {
    return e->tree_values && e->tree_group_first && e->tree_groups && e->tree_groups(state) >= 2;
}

ts_status tsr_score_split(const tse_engine *e, const void *state, const tse_layout *layout, double base,
                          const float *row, unsigned n_threads, double *out) {
    uint32_t groups = e->tree_groups(state), n_trees = e->tree_group_first(state, groups);
    size_t head = (layout->scratch_bytes + 63) & ~(size_t)63;
    char *mem = tsr_scratch(head + (size_t)n_trees * sizeof(double) + 1);
    if (!mem) return TS_ERR_NO_MEMORY;
    split_job j = {e, state, layout->scratch_bytes, row, (double *)(mem + head)};
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
