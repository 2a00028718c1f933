/* pool.c: tsr_parallel_for on one lazily started process-wide pool of (cpus - 1) helper threads. */
#include "platform/pool.h"

#include "platform/fpenv.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

/*
 * How a call runs
 * ---------------
 * The caller puts a job on its own stack and appends it to the list of open jobs
 * (under the pool mutex), waking as many idle helpers as the job has seats. Everyone
 * working on the job claims chunks with one atomic fetch_add on `next`: no lock per
 * chunk. A helper takes a seat (under the mutex, while the job is listed and still has
 * unclaimed chunks), raises `inside`, runs chunks until none is left, and lowers
 * `inside` (under the mutex) as the very last thing it does with the job.
 *
 * When the caller finds no chunk left to claim, it removes the job from the list, so
 * no helper can enter any more, and waits until `inside` is 0: a helper leaves only
 * after finishing the chunks it claimed, so then every chunk has run and no thread will
 * touch the job again, and the caller may return (freeing the job with its frame).
 * The waiting spins briefly, then blocks on the pool's `left` condition variable, which
 * helpers broadcast when they lower some job's `inside` to 0 (shared by all callers:
 * a helper must not touch a per-job condition variable after leaving the job).
 *
 * A helper that finds no job polls the count of listed jobs for a few microseconds
 * (back-to-back calls then need no wake-up), and then sleeps in pthread_cond_wait on
 * `work`; a caller signals only as many sleeping helpers as its seats exceed the
 * spinning ones. A helper rechecks the list under the mutex when it stops spinning, so
 * no job published meanwhile is missed.
 *
 * A helper is in one job at a time and a caller works only on its own job, so the
 * threads running chunks never exceed the callers plus the helpers.
 *
 * A pool without helpers (the process may run on one CPU, or no thread could be
 * started) runs every call as n_threads 1 does: fn(ctx, 0, n_items) in the caller.
 */

/* Polls (each with a `pause`, 25-150 ns) before blocking: a finished caller waiting for
 * its helpers, and a helper waiting for a job. A few microseconds. */
#define CALLER_SPINS 256
#define HELPER_SPINS 128
/* Helper threads run engine code that keeps ~100 KiB on the stack. */
#define HELPER_STACK (4u << 20)

typedef struct job {
    tsr_chunk_fn fn;
    void *ctx;
    size_t n_items, grain, n_chunks;
    atomic_size_t next;   /* the next chunk to claim (may run past n_chunks) */
    atomic_int status;    /* the first failure, TS_OK while none */
    atomic_int inside;    /* helpers seated; changed under the mutex, polled without it */
    int seats;            /* helper seats left; under the mutex */
    struct job *link;     /* next open job; under the mutex */
} job;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t work;  /* idle helpers wait here for a job */
    pthread_cond_t left;  /* finished callers wait here for their helpers to leave */
    job *open;            /* listed jobs, oldest first */
    atomic_uint n_open;   /* how many; changed under the mutex, polled by spinning helpers */
    unsigned n_helpers;   /* helper threads started */
    unsigned idle;        /* helpers waiting on `work` */
    unsigned spinning;    /* helpers polling n_open without the mutex */
    int started;
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0, 0, 0, 0};

/* Set while this thread runs chunks (always, on helpers): a nested call runs inline. */
static _Thread_local int in_chunk;

/* Survives fork (the child's copy says 1): the handler is registered once per process. */
static int atfork_registered;

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("pause");
#endif
}

/* Runs chunks of j until none is left or one has failed. */
static void run_chunks(job *j) {
    for (;;) {
        if (atomic_load_explicit(&j->status, memory_order_relaxed) != TS_OK) return;
        size_t c = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (c >= j->n_chunks) return;
        size_t begin = c * j->grain;
        size_t end = j->n_items - begin < j->grain ? j->n_items : begin + j->grain;
        ts_status st = j->fn(j->ctx, begin, end);
        if (st != TS_OK) {
            int ok = TS_OK;
            atomic_compare_exchange_strong(&j->status, &ok, (int)st);
        }
    }
}

/* Under the mutex: the oldest listed job with a free seat and chunks left; seated. */
static job *take_seat(void) {
    for (job *j = pool.open; j; j = j->link) {
        if (j->seats == 0) continue;
        if (atomic_load_explicit(&j->next, memory_order_relaxed) >= j->n_chunks) continue;
        if (atomic_load_explicit(&j->status, memory_order_relaxed) != TS_OK) continue;
        j->seats--;
        atomic_fetch_add_explicit(&j->inside, 1, memory_order_relaxed);
        return j;
    }
    return NULL;
}

/* Under the mutex, which it releases while polling until some job is listed, or for
 * HELPER_SPINS polls at most. */
static void spin_for_job(void) {
    pool.spinning++;
    pthread_mutex_unlock(&pool.mu);
    for (int i = 0; i < HELPER_SPINS; i++) {
        if (atomic_load_explicit(&pool.n_open, memory_order_relaxed) != 0) break;
        cpu_relax();
    }
    pthread_mutex_lock(&pool.mu);
    pool.spinning--;
}

static void *helper_main(void *arg) {
    (void)arg;
    in_chunk = 1;
    (void)tsr_fpenv_enter(); /* for good: only engines run here (fpenv.h) */
    pthread_mutex_lock(&pool.mu);
    int may_spin = 1; /* once after each job or wake-up: a few microseconds at a time */
    for (;;) {
        job *j = take_seat();
        if (!j) {
            if (may_spin) {
                spin_for_job();
                may_spin = 0;
                continue;
            }
            pool.idle++;
            pthread_cond_wait(&pool.work, &pool.mu);
            pool.idle--;
            may_spin = 1;
            continue;
        }
        may_spin = 1;
        pthread_mutex_unlock(&pool.mu);
        run_chunks(j);
        pthread_mutex_lock(&pool.mu);
        /* The last touch of j: once `inside` is 0 its caller may return. */
        if (atomic_fetch_sub_explicit(&j->inside, 1, memory_order_release) == 1)
            pthread_cond_broadcast(&pool.left);
    }
    return NULL;
}

/* In a fork()ed child only the forking thread exists: forget the helpers and any jobs
 * of other threads, and start from scratch (the synchronization objects may have been
 * held or waited on by threads that are gone, so they are made new). */
static void reset_in_child(void) {
    pthread_mutex_init(&pool.mu, NULL);
    pthread_cond_init(&pool.work, NULL);
    pthread_cond_init(&pool.left, NULL);
    pool.open = NULL;
    atomic_store(&pool.n_open, 0);
    pool.n_helpers = 0;
    pool.idle = 0;
    pool.spinning = 0;
    pool.started = 0;
}

/* Under the mutex, once per process (and again in a fork()ed child): start
 * ts_cpu_count() - 1 detached helpers with every signal blocked (signals go to the
 * application's threads) and a 4 MiB stack. Fewer if thread creation fails. */
static void start_pool(void) {
    pool.started = 1;
    if (!atfork_registered) atfork_registered = pthread_atfork(NULL, NULL, reset_in_child) == 0;
    unsigned want = ts_cpu_count() - 1;
    if (want == 0) return;
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0) return;
    pthread_attr_setstacksize(&attr, HELPER_STACK);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (unsigned i = 0; i < want; i++) {
        pthread_t t;
        if (pthread_create(&t, &attr, helper_main, NULL) != 0) break;
        pool.n_helpers++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
}

/* Under the mutex: list j (with at most `helpers` seats) and wake sleeping helpers for
 * the seats that spinning ones will not take. Returns 0 when the pool has no helper,
 * and then j is not listed. */
static int publish(job *j, size_t helpers) {
    if (!pool.started) start_pool();
    if (pool.n_helpers == 0) return 0;
    if (helpers > pool.n_helpers) helpers = pool.n_helpers;
    j->seats = (int)helpers;
    job **tail = &pool.open;
    while (*tail) tail = &(*tail)->link;
    *tail = j;
    atomic_fetch_add_explicit(&pool.n_open, 1, memory_order_relaxed);
    size_t wanted = helpers > pool.spinning ? helpers - pool.spinning : 0;
    unsigned wake = pool.idle < wanted ? pool.idle : (unsigned)wanted;
    for (unsigned i = 0; i < wake; i++) pthread_cond_signal(&pool.work);
    return 1;
}

/* Under the mutex. */
static void unlist(job *j) {
    for (job **p = &pool.open; *p; p = &(*p)->link)
        if (*p == j) {
            *p = j->link;
            atomic_fetch_sub_explicit(&pool.n_open, 1, memory_order_relaxed);
            return;
        }
}

/* Called by the caller after it found no chunk left: unlist j and wait for its helpers
 * to leave, spinning briefly before blocking. */
static void finish(job *j) {
    pthread_mutex_lock(&pool.mu);
    unlist(j);
    if (atomic_load_explicit(&j->inside, memory_order_acquire) == 0) {
        pthread_mutex_unlock(&pool.mu);
        return;
    }
    pthread_mutex_unlock(&pool.mu);
    for (int i = 0; i < CALLER_SPINS; i++) {
        if (atomic_load_explicit(&j->inside, memory_order_acquire) == 0) return;
        cpu_relax();
    }
    pthread_mutex_lock(&pool.mu);
    while (atomic_load_explicit(&j->inside, memory_order_acquire) != 0) pthread_cond_wait(&pool.left, &pool.mu);
    pthread_mutex_unlock(&pool.mu);
}

ts_status tsr_parallel_for(unsigned n_threads, size_t n_items, size_t grain, tsr_chunk_fn fn, void *ctx) {
    if (grain == 0) grain = 1;
    if (n_threads <= 1 || n_items <= grain || in_chunk) return fn(ctx, 0, n_items);
    size_t n_chunks = n_items / grain + (n_items % grain != 0);
    size_t helpers = n_threads - 1 < n_chunks - 1 ? n_threads - 1 : n_chunks - 1;
    job j = {.fn = fn, .ctx = ctx, .n_items = n_items, .grain = grain, .n_chunks = n_chunks};
    atomic_init(&j.next, 0);
    atomic_init(&j.status, TS_OK);
    atomic_init(&j.inside, 0);
    pthread_mutex_lock(&pool.mu);
    int listed = publish(&j, helpers);
    pthread_mutex_unlock(&pool.mu);
    if (!listed) return fn(ctx, 0, n_items);
    in_chunk = 1;
    run_chunks(&j);
    in_chunk = 0;
    finish(&j);
    return (ts_status)atomic_load_explicit(&j.status, memory_order_relaxed);
}

size_t tsr_grain(unsigned n_threads, size_t n_rows, size_t min_rows) {
    size_t per = n_rows / ((size_t)(n_threads ? n_threads : 1) * 4);
    return per > min_rows ? per : min_rows;
}
