/* chunk.c: tsp_score_chunk, one engine call over a slice of a batch on this thread's scratch, and tsp_score_split, one row's trees across threads. */
#include "scorer/chunk.h"

#include "common/error.h"
#include "platform/pool.h"

#include <stdatomic.h>

ts_status tsp_score_chunk(void *ctx, size_t begin, size_t end) {
    const tsp_score_job *j = ctx;
    tsp_chunk_mem mem;
    TS_TRY(tsp_chunk_scratch(j->scratch_bytes, NULL, 0, &mem));
    j->engine->score(j->state, j->x + begin * j->stride, end - begin, j->stride, j->out + begin, mem.engine);
    return TS_OK;
}

/* The most parts a row's groups are cut into (about four per thread). */
#define SPLIT_PARTS_MAX 256

typedef struct split_job {
    const tse_engine *engine;
    const void *state;
    size_t scratch_bytes;
    const float *row;
    double *vals;               /* indexed by tree */
    size_t groups, grain, n_parts;
    atomic_uchar done[SPLIT_PARTS_MAX]; /* part p's values are in vals */
    atomic_size_t claimed;      /* parts started */
    atomic_int lock;            /* held by the thread adding parts to sum */
    size_t next;                /* the next part to add; under lock */
    atomic_size_t added;        /* next, for the calling thread's polling */
    double sum;                 /* base + the parts before next, in tree order; under lock */
} split_job;

/* Part p's groups [g0, g1). */
static void part_groups(const split_job *j, size_t p, uint32_t *g0, uint32_t *g1) {
    size_t a = p * j->grain, b = a + j->grain < j->groups ? a + j->grain : j->groups;
    *g0 = (uint32_t)a;
    *g1 = (uint32_t)b;
}

/* Adds the parts whose values are in, in order, while no other thread is adding: the
 * sum's dependent additions (about 1 ns a tree) overlap the other threads' work. A
 * thread that marks its part done and finds the lock taken leaves it to the holder,
 * who looks at `done` again after letting go (sequentially consistent: one of the two
 * sees the other). */
static void add_done_parts(split_job *j) {
    for (;;) {
        int free_ = 0;
        if (!atomic_compare_exchange_strong(&j->lock, &free_, 1)) return;
        size_t p = j->next;
        double sum = j->sum;
        while (p < j->n_parts && atomic_load_explicit(&j->done[p], memory_order_acquire)) {
            uint32_t g0, g1;
            part_groups(j, p++, &g0, &g1);
            const uint32_t t1 = j->engine->tree_group_first(j->state, g1);
            for (uint32_t t = j->engine->tree_group_first(j->state, g0); t < t1; t++) sum += j->vals[t];
        }
        j->next = p;
        j->sum = sum;
        atomic_store_explicit(&j->added, p, memory_order_relaxed);
        atomic_store(&j->lock, 0);
        if (p >= j->n_parts || !atomic_load(&j->done[p])) return;
    }
}

/* The split job the calling thread is running (its own chunks know it by this). */
static _Thread_local const split_job *own_split;

/* Polls (each with a `pause`) of the calling thread for the parts other threads are
 * writing, about 100 us: see split_chunk. */
#define SPLIT_WAIT_SPINS 4096

static void cpu_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("pause");
#endif
}

/* Parts [p0, p1) of the row (one at a time), on this thread's scratch. The calling
 * thread, once every part is started, adds the others' parts as they come in (polling
 * up to SPLIT_WAIT_SPINS times): else it would wait for them in the pool, whose
 * blocking wait costs a wake-up when the last one is in, and add them only then. */
static ts_status split_chunk(void *ctx, size_t p0, size_t p1) {
    split_job *j = ctx;
    tsp_chunk_mem mem;
    TS_TRY(tsp_chunk_scratch(j->scratch_bytes, NULL, 0, &mem));
    for (size_t p = p0; p < p1; p++) {
        uint32_t g0, g1;
        atomic_fetch_add(&j->claimed, 1);
        part_groups(j, p, &g0, &g1);
        j->engine->tree_values(j->state, j->row, g0, g1, j->vals + j->engine->tree_group_first(j->state, g0), mem.engine);
        atomic_store(&j->done[p], 1);
        add_done_parts(j);
    }
    if (own_split != j || atomic_load(&j->claimed) < j->n_parts) return TS_OK;
    for (int i = 0; i < SPLIT_WAIT_SPINS;) {
        const size_t a = atomic_load(&j->added);
        if (a >= j->n_parts) break;
        if (atomic_load(&j->done[a])) {
            add_done_parts(j);
        } else {
            cpu_pause();
            i++;
        }
    }
    return TS_OK;
}

int tsp_can_split(const tse_engine *e, const void *state) {
    return e->tree_values && e->tree_group_first && e->tree_groups && e->tree_groups(state) >= 2;
}

size_t tsp_split_scratch_bytes(const tse_engine *e, const void *state, const tse_layout *layout) {
    const uint32_t n_trees = e->tree_group_first(state, e->tree_groups(state));
    return tsp_align64(layout->scratch_bytes) + (size_t)n_trees * sizeof(double) + 1;
}

ts_status tsp_score_split(const tse_engine *e, const void *state, const tse_layout *layout, double base,
                          const float *row, unsigned n_threads, double *out) {
    uint32_t groups = e->tree_groups(state), n_trees = e->tree_group_first(state, groups);
    /* [engine scratch (the calling thread's own chunks) | the row's n_trees values]:
     * tsp_split_scratch_bytes in all */
    const size_t vals_bytes = (size_t)n_trees * sizeof(double) + 1;
    tsp_chunk_mem mem;
    TS_TRY(tsp_chunk_scratch(layout->scratch_bytes, &vals_bytes, 1, &mem));
    split_job j = {.engine = e, .state = state, .scratch_bytes = layout->scratch_bytes, .row = row,
                   .vals = mem.part[0], .groups = groups, .sum = base};
    /* About four parts per thread: a helper preempted by another process (a busy
     * machine) then holds up an eighth of the row on two threads, not half of it. */
    size_t per = (size_t)(n_threads ? n_threads : 1) * 4;
    if (per > SPLIT_PARTS_MAX) per = SPLIT_PARTS_MAX;
    j.grain = (groups + per - 1) / per;
    j.n_parts = (groups + j.grain - 1) / j.grain;
    for (size_t p = 0; p < j.n_parts; p++) atomic_init(&j.done[p], 0);
    atomic_init(&j.lock, 0);
    atomic_init(&j.claimed, 0);
    atomic_init(&j.added, 0);
    own_split = &j;
    ts_status st = tsr_parallel_for(n_threads, j.n_parts, 1, split_chunk, &j);
    own_split = NULL;
    if (st != TS_OK) return st;
    add_done_parts(&j); /* every part is in: the rest of the sum */
    *out = j.sum;
    return TS_OK;
}
