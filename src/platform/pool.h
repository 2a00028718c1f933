/* pool.h: one process-wide pool of helper threads for splitting a batch, without oversubscription. */
#ifndef TS_PLATFORM_POOL_H
#define TS_PLATFORM_POOL_H

#include <stddef.h>

#include "treescore.h"

/*
 * tsr_parallel_for runs fn(ctx, begin, end) over [0, n_items) cut into chunks of
 * `grain` items (the last may be shorter), with at most `n_threads` threads at once:
 * the calling thread, which always works, plus helpers of the process-wide pool that
 * are idle when the call starts or become idle while it runs. The pool has
 * ts_cpu_count() - 1 threads, started on first use and kept until exit; no thread is
 * started or joined per call. So when many caller threads score at once, helpers are
 * busy and each caller scores alone: the threads working never exceed the callers
 * plus the pool.
 *
 * Chunks are handed out in increasing order by an atomic counter; which thread runs a
 * chunk varies, so fn must write only results that belong to its own items.
 * n_threads <= 1, or n_items <= grain, runs fn(ctx, 0, n_items) in the calling thread
 * without touching the pool; so does a pool without helpers (one CPU, or none could be
 * started). The first non-TS_OK status returned by fn is returned
 * (chunks not started yet are then skipped); TS_OK otherwise.
 *
 * Safe to call from any number of threads at once, and from inside fn (a nested call
 * runs inline). A fork()ed child starts with no helpers and restarts them on first use.
 */
typedef ts_status (*tsr_chunk_fn)(void *ctx, size_t begin, size_t end);

ts_status tsr_parallel_for(unsigned n_threads, size_t n_items, size_t grain, tsr_chunk_fn fn, void *ctx);

/* Rows per chunk of a batch of n_rows on n_threads: at least min_rows (the engine's
 * smallest worthwhile chunk), and small enough to give every thread about 4 chunks (so
 * an unlucky slow chunk is evened out). The scorer and the planner's timing both use it. */
size_t tsr_grain(unsigned n_threads, size_t n_rows, size_t min_rows);

#endif /* TS_PLATFORM_POOL_H */
