/* test_runtime.c: CPU/ISA detection, cache sizes, the thread pool's parallel for, per-thread scratch. */
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "platform/cpu.h"
#include "platform/cpu_caches.h"
#include "platform/notes.h"
#include "platform/pool.h"
#include "platform/scratch.h"
#include "treescore.h"

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#ifndef UNDER_TSAN
#define UNDER_TSAN 0
#endif

/* A huge allocation must fail with NULL under the sanitizers too, as it does in libc. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
    return "allocator_may_return_null=1";
}
const char *__tsan_default_options(void);
const char *__tsan_default_options(void) {
    return "allocator_may_return_null=1";
}

/* ---- ISA names and levels ----------------------------------------------------------- */

static void test_isa_names(void) {
    for (int i = 0; i < TS_ISA_COUNT; i++) {
        ts_isa back = (ts_isa)99;
        CHECK_STATUS(ts_isa_from_name(ts_isa_name((ts_isa)i), &back), TS_OK);
        CHECK(back == (ts_isa)i);
    }
    CHECK(strcmp(ts_isa_name(TS_ISA_SSE42), "sse4.2") == 0);
    CHECK(strcmp(ts_isa_name(TS_ISA_AVX512), "avx512") == 0);
    CHECK(strcmp(ts_isa_name((ts_isa)77), "unknown") == 0);
    ts_isa isa = TS_ISA_AUTO;
    CHECK_STATUS(ts_isa_from_name("sse42", &isa), TS_OK);
    CHECK(isa == TS_ISA_SSE42);
    CHECK_STATUS(ts_isa_from_name("avx-512", &isa), TS_OK);
    CHECK(isa == TS_ISA_AVX512);
    CHECK_STATUS(ts_isa_from_name("avx3", &isa), TS_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ts_isa_from_name("", &isa), TS_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ts_isa_from_name("AVX2 ", &isa), TS_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ts_isa_from_name(NULL, &isa), TS_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ts_isa_from_name("avx2", NULL), TS_ERR_INVALID_ARGUMENT);
}

#define ALL_FEATURES ((1u << 15) - 1)

/* Removing any feature never raises the level; the levels need exactly their sets. */
static void test_isa_of_features(void) {
    int raised = 0;
    for (uint32_t m = 0; m <= ALL_FEATURES; m++)
        for (unsigned b = 0; b < 15; b++)
            if ((m >> b & 1) && tsr_isa_of_features(m & ~(1u << b)) > tsr_isa_of_features(m)) raised++;
    CHECK_MSG(raised == 0, "%d feature removals raised the level", raised);
    CHECK(tsr_isa_of_features(0) == TS_ISA_SCALAR);
    CHECK(tsr_isa_of_features(ALL_FEATURES) == TS_ISA_AVX512);
    uint32_t v2 = TSR_CPU_SSE42 | TSR_CPU_POPCNT;
    uint32_t v3 = v2 | TSR_CPU_AVX | TSR_CPU_AVX2 | TSR_CPU_BMI1 | TSR_CPU_BMI2 | TSR_CPU_LZCNT | TSR_CPU_FMA;
    uint32_t v4 = v3 | TSR_CPU_AVX512F | TSR_CPU_AVX512BW | TSR_CPU_AVX512DQ | TSR_CPU_AVX512VL | TSR_CPU_AVX512CD;
    CHECK(tsr_isa_of_features(v2) == TS_ISA_SSE42);
    CHECK(tsr_isa_of_features(TSR_CPU_SSE42) == TS_ISA_SCALAR);
    CHECK(tsr_isa_of_features(v3) == TS_ISA_AVX2);
    CHECK(tsr_isa_of_features(v3 & ~TSR_CPU_BMI2) == TS_ISA_SSE42);
    CHECK(tsr_isa_of_features(v4) == TS_ISA_AVX512); /* Skylake-X: no VPOPCNTDQ, VBMI2 */
    CHECK(tsr_isa_of_features(v4 & ~TSR_CPU_AVX512VL) == TS_ISA_AVX2);
    CHECK(tsr_isa_of_features(v4 & ~TSR_CPU_AVX2) == TS_ISA_SSE42);
}

/* 1 if the "flags" line of /proc/cpuinfo lists `flag`, 0 if not, -1 if unreadable. */
static int cpuinfo_has(const char *flag) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return -1;
    char line[8192];
    int found = -1;
    size_t n = strlen(flag);
    while (found < 0 && fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0) continue;
        found = 0;
        for (char *p = strstr(line, flag); p; p = strstr(p + 1, flag))
            if (p[-1] == ' ' && (p[n] == ' ' || p[n] == '\n')) found = 1;
    }
    fclose(f);
    return found;
}

/* On Linux x86 the kernel's flags (which also drop AVX when the OS does not enable its
 * state) must agree with cpuid + xgetbv. */
static void test_cpu_features(void) {
    uint32_t f = tsr_cpu_features();
    ts_isa isa = ts_cpu_isa();
    printf("cpu: features 0x%04x, isa %s (detected %s), %u cpus\n", (unsigned)f, ts_isa_name(isa),
           ts_isa_name(tsr_isa_of_features(f)), ts_cpu_count());
    CHECK(f == tsr_cpu_features());
    CHECK(isa >= TS_ISA_SCALAR && isa <= tsr_isa_of_features(f));
    if (!getenv("TREESCORE_ISA")) CHECK(isa == tsr_isa_of_features(f));
    CHECK(ts_cpu_count() >= 1);
#if defined(__x86_64__) || defined(__i386__)
    static const struct { const char *flag; uint32_t bit; } flags[] = {
        {"sse4_2", TSR_CPU_SSE42},     {"popcnt", TSR_CPU_POPCNT},       {"avx", TSR_CPU_AVX},
        {"avx2", TSR_CPU_AVX2},        {"bmi1", TSR_CPU_BMI1},           {"bmi2", TSR_CPU_BMI2},
        {"fma", TSR_CPU_FMA},          {"avx512f", TSR_CPU_AVX512F},     {"avx512bw", TSR_CPU_AVX512BW},
        {"avx512dq", TSR_CPU_AVX512DQ}, {"avx512vl", TSR_CPU_AVX512VL},  {"avx512cd", TSR_CPU_AVX512CD},
        {"avx512_vpopcntdq", TSR_CPU_VPOPCNTDQ}, {"avx512_vbmi2", TSR_CPU_AVX512VBMI2}, {"abm", TSR_CPU_LZCNT},
        {"gfni", TSR_CPU_GFNI},
    };
    if (cpuinfo_has("sse2") < 0) { /* no /proc: at least every x86-64 of the last decade */
        if (!getenv("TREESCORE_ISA")) CHECK(isa >= TS_ISA_SSE42);
        return;
    }
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        int has = cpuinfo_has(flags[i].flag);
        CHECK_MSG(has == !!(f & flags[i].bit), "/proc/cpuinfo %s %s, cpuid says %d", flags[i].flag,
                  has ? "listed" : "absent", !!(f & flags[i].bit));
    }
#else
    CHECK(f == 0 && isa == TS_ISA_SCALAR);
#endif
}

static void test_isa_resolve(void) {
    ts_isa best = ts_cpu_isa();
    CHECK(tsr_isa_resolve(TS_ISA_AUTO) == best);
    for (int i = TS_ISA_SCALAR; i < TS_ISA_COUNT; i++) {
        ts_isa want = (ts_isa)i;
        CHECK(tsr_isa_resolve(want) == (want <= best ? want : best));
    }
    CHECK(tsr_isa_resolve(TS_ISA_SCALAR) == TS_ISA_SCALAR);
    CHECK(tsr_isa_resolve((ts_isa)42) == best);
}

/* ---- Environment variables, in child processes (the values are cached) -------------- */

/* Child mode: print what the environment made of the detection. */
/* The library prints nothing: its warnings go to a sink, which this child prints as
 * the CLI does. */
static void print_note(tsr_note_kind kind, const char *line, void *ctx) {
    (void)ctx;
    if (kind == TSR_NOTE_WARN) fprintf(stderr, "%s\n", line);
}

static int print_detection(void) {
    tsr_notes_set_sink(print_note, NULL);
    const tsr_caches *c = tsr_cache_sizes();
    printf("%s %zu %zu %zu\n", ts_isa_name(ts_cpu_isa()), c->l1d, c->l2, c->l3);
    return 0;
}

static char self_path[4096];

/* Runs this program in child mode under `env` (shell assignments) and returns its
 * stdout and stderr together in out. */
static int run_child(const char *env, char *out, size_t size) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "env %s '%s' --print-detection 2>&1", env, self_path);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, size - 1, p);
    out[n] = '\0';
    return pclose(p);
}

static void test_env_overrides(void) {
#if defined(__linux__)
    ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
    if (n <= 0 || strchr(self_path, '\'')) return;
    self_path[n] = '\0';
    ts_isa cpu = tsr_isa_of_features(tsr_cpu_features());
    const tsr_caches *c = tsr_cache_sizes();
    char out[4096], want[4096];

    CHECK(run_child("TREESCORE_ISA=scalar", out, sizeof out) == 0);
    snprintf(want, sizeof want, "scalar %zu %zu %zu\n", c->l1d, c->l2, c->l3);
    CHECK_MSG(strcmp(out, want) == 0, "got '%s'", out);

    CHECK(run_child("TREESCORE_ISA=sse42", out, sizeof out) == 0);
    snprintf(want, sizeof want, "%s ", ts_isa_name(cpu < TS_ISA_SSE42 ? cpu : TS_ISA_SSE42));
    CHECK_MSG(strncmp(out, want, strlen(want)) == 0, "got '%s'", out);

    CHECK(run_child("TREESCORE_ISA=avx-512", out, sizeof out) == 0); /* above the CPU: no effect */
    snprintf(want, sizeof want, "%s ", ts_isa_name(cpu));
    CHECK_MSG(strncmp(out, want, strlen(want)) == 0, "got '%s'", out);

    CHECK(run_child("TREESCORE_ISA=xyz", out, sizeof out) == 0);
    snprintf(want, sizeof want,
             "treescore: ignoring TREESCORE_ISA=xyz (expected scalar, sse4.2, avx2 or avx512)\n%s %zu %zu %zu\n",
             ts_isa_name(cpu), c->l1d, c->l2, c->l3);
    CHECK_MSG(strcmp(out, want) == 0, "got '%s'", out);

    CHECK(run_child("TREESCORE_ISA= TREESCORE_L1D=64K TREESCORE_L2=3m TREESCORE_L3=0", out, sizeof out) == 0);
    snprintf(want, sizeof want, "%s 65536 3145728 0\n", ts_isa_name(cpu));
    CHECK_MSG(strcmp(out, want) == 0, "got '%s'", out);

    CHECK(run_child("TREESCORE_ISA= TREESCORE_L1D=12Q TREESCORE_L2=0 TREESCORE_L3=1G", out, sizeof out) == 0);
    snprintf(want, sizeof want,
             "treescore: ignoring TREESCORE_L1D=12Q (expected a size in bytes, with an optional K, M or G suffix)\n"
             "treescore: ignoring TREESCORE_L2=0 (expected a size in bytes, with an optional K, M or G suffix)\n"
             "%s %zu %zu 1073741824\n",
             ts_isa_name(cpu), c->l1d, c->l2);
    CHECK_MSG(strcmp(out, want) == 0, "got '%s'", out);
#endif
}

/* ---- Cache sizes -------------------------------------------------------------------- */

static void test_cache_sizes(void) {
    const tsr_caches *c = tsr_cache_sizes();
    printf("caches (%s): L1d %zu, L2 %zu, L3 %zu bytes\n", c->source ? c->source : "?", c->l1d, c->l2, c->l3);
    CHECK(c == tsr_cache_sizes());
    CHECK(c->source != NULL);
    CHECK(c->l1d >= 1024 && c->l2 > c->l1d);
    if (!getenv("TREESCORE_L3")) CHECK(c->l3 == 0 || c->l3 >= c->l2);
}

/* ---- tsr_parallel_for ---------------------------------------------------------------- */

typedef struct sum_ctx {
    unsigned char *visits; /* each item's chunk alone writes it */
    size_t grain;
    int chunked;           /* 1 when chunks must be grain-aligned */
    atomic_ullong sum;
    atomic_int bad_ranges;
    atomic_int calls;
} sum_ctx;

static ts_status sum_chunk(void *p, size_t begin, size_t end) {
    sum_ctx *c = p;
    unsigned long long s = 0;
    if (c->chunked && (begin % c->grain != 0 || end - begin > c->grain || end <= begin))
        atomic_fetch_add(&c->bad_ranges, 1);
    for (size_t i = begin; i < end; i++) {
        c->visits[i]++;
        s += i + 1;
    }
    atomic_fetch_add(&c->sum, s);
    atomic_fetch_add(&c->calls, 1);
    return TS_OK;
}

/* Whether the pool cuts a call into chunks: else fn gets [0, n) at once (n_threads 1,
 * one chunk, or no helpers in the pool because this process may run on one CPU only). */
static int splits(unsigned n_threads, size_t n, size_t grain) {
    return n_threads > 1 && n > grain && ts_cpu_count() > 1;
}

/* Every item visited once and the sum right, for many thread counts and grains. */
static void test_parallel_sum(void) {
    const size_t n = 1000000;
    const unsigned threads[] = {1, 2, 3, 8, 64};
    const size_t grains[] = {0, 1, 7, 1000, 4096, 999999, 1000000, 5000000};
    unsigned char *visits = malloc(n);
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++)
        for (size_t g = 0; g < sizeof grains / sizeof grains[0]; g++) {
            if (UNDER_TSAN && grains[g] < 7 && threads[t] != 3) continue; /* 10^6 chunks: slow */
            sum_ctx c = {.visits = visits, .grain = grains[g] ? grains[g] : 1};
            c.chunked = splits(threads[t], n, c.grain);
            memset(visits, 0, n);
            CHECK_STATUS(tsr_parallel_for(threads[t], n, grains[g], sum_chunk, &c), TS_OK);
            CHECK_MSG(atomic_load(&c.sum) == (unsigned long long)n * (n + 1) / 2, "threads %u grain %zu",
                      threads[t], grains[g]);
            size_t wrong = 0;
            for (size_t i = 0; i < n; i++) wrong += visits[i] != 1;
            CHECK_MSG(wrong == 0, "threads %u grain %zu: %zu items not visited once", threads[t], grains[g], wrong);
            CHECK(atomic_load(&c.bad_ranges) == 0);
            size_t want_calls = c.chunked ? (n + c.grain - 1) / c.grain : 1;
            CHECK_MSG((size_t)atomic_load(&c.calls) == want_calls, "threads %u grain %zu: %d calls", threads[t],
                      grains[g], atomic_load(&c.calls));
        }
    free(visits);
}

static ts_status empty_chunk(void *p, size_t begin, size_t end) {
    atomic_int *calls = p;
    if (begin != 0 || end != 0) return TS_ERR_GENERIC;
    atomic_fetch_add(calls, 1);
    return TS_OK;
}

static void test_parallel_empty(void) {
    atomic_int calls = 0;
    CHECK_STATUS(tsr_parallel_for(4, 0, 10, empty_chunk, &calls), TS_OK);
    CHECK_STATUS(tsr_parallel_for(4, 0, 0, empty_chunk, &calls), TS_OK);
    CHECK(atomic_load(&calls) == 2);
}

typedef struct fail_ctx {
    size_t bad_item;
    ts_status status;
    atomic_int ran_after; /* chunks that started after the failing one returned */
    atomic_int failed;
} fail_ctx;

static ts_status failing_chunk(void *p, size_t begin, size_t end) {
    fail_ctx *c = p;
    if (atomic_load(&c->failed)) atomic_fetch_add(&c->ran_after, 1);
    if (begin <= c->bad_item && c->bad_item < end) {
        atomic_store(&c->failed, 1);
        return c->status;
    }
    return TS_OK;
}

static void test_parallel_error(void) {
    const unsigned threads[] = {1, 2, 4, 64};
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        fail_ctx c = {.bad_item = 4321, .status = TS_ERR_NO_MEMORY};
        CHECK_STATUS(tsr_parallel_for(threads[t], 100000, 100, failing_chunk, &c), TS_ERR_NO_MEMORY);
        /* Chunks not started yet are skipped; how many others had started depends on the
         * scheduling, so this is only shown. */
        if (threads[t] == 2) printf("%d chunks started after the failure\n", atomic_load(&c.ran_after));
        fail_ctx last = {.bad_item = 99999, .status = TS_ERR_SHAPE};
        CHECK_STATUS(tsr_parallel_for(threads[t], 100000, 100, failing_chunk, &last), TS_ERR_SHAPE);
    }
}

typedef struct nest_ctx {
    pthread_t outer_thread;
    atomic_int bad;
    atomic_ullong sum;
    unsigned char *visits;
} nest_ctx;

typedef struct inner_ctx {
    pthread_t thread;
    atomic_int calls;
    unsigned long long sum;
    nest_ctx *outer;
    size_t base;
} inner_ctx;

static ts_status inner_chunk(void *p, size_t begin, size_t end) {
    inner_ctx *c = p;
    if (!pthread_equal(pthread_self(), c->thread) || begin != 0 || end != 1000) atomic_fetch_add(&c->outer->bad, 1);
    atomic_fetch_add(&c->calls, 1);
    for (size_t i = begin; i < end; i++) {
        c->outer->visits[c->base + i]++;
        c->sum += i;
    }
    return TS_OK;
}

static ts_status outer_chunk(void *p, size_t begin, size_t end) {
    nest_ctx *c = p;
    for (size_t k = begin; k < end; k++) {
        inner_ctx in = {.thread = pthread_self(), .outer = c, .base = k * 1000};
        ts_status st = tsr_parallel_for(4, 1000, 10, inner_chunk, &in);
        if (st != TS_OK) return st;
        if (atomic_load(&in.calls) != 1) atomic_fetch_add(&c->bad, 1);
        atomic_fetch_add(&c->sum, in.sum);
    }
    return TS_OK;
}

/* A call from inside a chunk runs inline, on the chunk's thread, as one range. */
static void test_parallel_nested(void) {
    nest_ctx c = {.outer_thread = pthread_self(), .visits = calloc(64 * 1000, 1)};
    CHECK_STATUS(tsr_parallel_for(4, 64, 1, outer_chunk, &c), TS_OK);
    CHECK(atomic_load(&c.bad) == 0);
    CHECK(atomic_load(&c.sum) == 64ull * (999 * 1000 / 2));
    size_t wrong = 0;
    for (size_t i = 0; i < 64 * 1000; i++) wrong += c.visits[i] != 1;
    CHECK(wrong == 0);
    free(c.visits);
}

#define MAX_SEEN 64

typedef struct who_ctx {
    pthread_mutex_t mu;
    pthread_t seen[MAX_SEEN];
    int n_seen;
    atomic_int running, max_running;
} who_ctx;

static ts_status who_chunk(void *p, size_t begin, size_t end) {
    who_ctx *c = p;
    int now = atomic_fetch_add(&c->running, 1) + 1;
    for (int m = atomic_load(&c->max_running); now > m && !atomic_compare_exchange_weak(&c->max_running, &m, now);) {
    }
    pthread_mutex_lock(&c->mu);
    int known = 0;
    for (int i = 0; i < c->n_seen; i++) known |= pthread_equal(c->seen[i], pthread_self());
    if (!known && c->n_seen < MAX_SEEN) c->seen[c->n_seen++] = pthread_self();
    pthread_mutex_unlock(&c->mu);
    volatile double x = 0; /* some work, so that helpers have time to join */
    for (size_t i = begin; i < end; i++)
        for (int k = 0; k < 2000; k++) x += (double)k;
    (void)x;
    atomic_fetch_sub(&c->running, 1);
    return TS_OK;
}

/* Never more threads than asked for, nor than the pool has plus the caller. */
static void test_parallel_thread_count(void) {
    const unsigned threads[] = {2, 3, 64};
    unsigned cpus = ts_cpu_count();
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        who_ctx c = {.mu = PTHREAD_MUTEX_INITIALIZER};
        CHECK_STATUS(tsr_parallel_for(threads[t], 400, 1, who_chunk, &c), TS_OK);
        unsigned limit = threads[t] < cpus ? threads[t] : cpus;
        printf("n_threads %u: %d threads ran chunks, at most %d at once (limit %u)\n", threads[t], c.n_seen,
               atomic_load(&c.max_running), limit);
        CHECK(c.n_seen >= 1 && (unsigned)c.n_seen <= limit);
        CHECK(atomic_load(&c.max_running) >= 1 && (unsigned)atomic_load(&c.max_running) <= limit);
    }
}

#define CALLERS 8
#define CALLER_ROUNDS 200

typedef struct caller_arg {
    int id;
    int failures;
} caller_arg;

static void *caller_main(void *p) {
    caller_arg *a = p;
    size_t n = 10000;
    unsigned char *visits = malloc(n);
    for (int r = 0; r < CALLER_ROUNDS; r++) {
        sum_ctx c = {.visits = visits, .grain = 1 + (size_t)((r * 37 + a->id * 11) % 700)};
        unsigned nt = 2 + (unsigned)((r + a->id) % 4);
        c.chunked = splits(nt, n, c.grain);
        memset(visits, 0, n);
        if (tsr_parallel_for(nt, n, c.grain, sum_chunk, &c) != TS_OK) a->failures++;
        if (atomic_load(&c.sum) != (unsigned long long)n * (n + 1) / 2 || atomic_load(&c.bad_ranges) != 0)
            a->failures++;
        for (size_t i = 0; i < n; i++)
            if (visits[i] != 1) {
                a->failures++;
                break;
            }
    }
    free(visits);
    return NULL;
}

/* Many callers at once: everyone's results right, nobody stuck (a hang trips the alarm). */
static void test_parallel_concurrent(void) {
    pthread_t t[CALLERS];
    caller_arg args[CALLERS];
    alarm(UNDER_TSAN ? 300 : 60);
    for (int i = 0; i < CALLERS; i++) {
        args[i] = (caller_arg){.id = i};
        CHECK(pthread_create(&t[i], NULL, caller_main, &args[i]) == 0);
    }
    for (int i = 0; i < CALLERS; i++) {
        pthread_join(t[i], NULL);
        CHECK_MSG(args[i].failures == 0, "caller %d: %d failures", i, args[i].failures);
    }
    alarm(0);
}

/* A fork()ed child has no helpers; its first parallel call starts new ones. */
static void test_parallel_fork(void) {
    if (UNDER_TSAN) return; /* TSan does not support threads after a multi-threaded fork */
    unsigned char *visits = malloc(100000);
    sum_ctx warm = {.visits = visits, .grain = 100, .chunked = splits(4, 100000, 100)};
    memset(visits, 0, 100000);
    CHECK_STATUS(tsr_parallel_for(4, 100000, 100, sum_chunk, &warm), TS_OK);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(30);
        int bad = 0;
        for (int r = 0; r < 50; r++) {
            sum_ctx c = {.visits = visits, .grain = 100, .chunked = splits(4, 100000, 100)};
            memset(visits, 0, 100000);
            if (tsr_parallel_for(4, 100000, 100, sum_chunk, &c) != TS_OK) bad = 1;
            if (atomic_load(&c.sum) != 100000ull * 100001 / 2 || atomic_load(&c.bad_ranges)) bad = 1;
        }
        _exit(bad);
    }
    CHECK(pid > 0);
    int status = -1;
    if (pid > 0) waitpid(pid, &status, 0);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status 0x%x", status);
    free(visits);
}

/* ---- tsr_scratch ---------------------------------------------------------------------- */

static void test_scratch_growth(void) {
    const size_t sizes[] = {0, 1, 63, 64, 65, 1000, 100, 1 << 20, 5000, 3 << 20, 17};
    unsigned char *prev = NULL;
    size_t largest = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        unsigned char *p = tsr_scratch(sizes[i]);
        CHECK(p != NULL);
        if (!p) continue;
        CHECK(((uintptr_t)p & 63) == 0);
        if (i > 0 && sizes[i] <= largest) CHECK(p == prev); /* never shrinks, no reallocation */
        if (sizes[i] > largest) largest = sizes[i];
        memset(p, 0xA5, sizes[i]);
        prev = p;
    }
    CHECK(tsr_scratch(SIZE_MAX) == NULL);       /* cannot grow: NULL, old buffer kept */
    CHECK(tsr_scratch(SIZE_MAX / 2 + 1) == NULL); /* allocation fails */
    CHECK(tsr_scratch(largest) == (void *)prev);
}

#define SCRATCH_THREADS 4

typedef struct scratch_arg {
    pthread_barrier_t *barrier;
    unsigned char *ptr;
    int id, ok;
} scratch_arg;

static void *scratch_main(void *p) {
    scratch_arg *a = p;
    a->ptr = tsr_scratch(4096 + (size_t)a->id * 1000);
    if (a->ptr) memset(a->ptr, a->id + 1, 4096);
    pthread_barrier_wait(a->barrier); /* all buffers alive at once */
    a->ok = a->ptr != NULL && ((uintptr_t)a->ptr & 63) == 0;
    for (size_t i = 0; a->ok && i < 4096; i++) a->ok = a->ptr[i] == a->id + 1;
    pthread_barrier_wait(a->barrier); /* the others have compared pointers */
    return NULL;
}

static void test_scratch_threads(void) {
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, SCRATCH_THREADS);
    pthread_t t[SCRATCH_THREADS];
    scratch_arg a[SCRATCH_THREADS];
    for (int i = 0; i < SCRATCH_THREADS; i++) {
        a[i] = (scratch_arg){.barrier = &barrier, .id = i};
        pthread_create(&t[i], NULL, scratch_main, &a[i]);
    }
    for (int i = 0; i < SCRATCH_THREADS; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < SCRATCH_THREADS; i++) {
        CHECK(a[i].ok);
        for (int k = 0; k < i; k++) CHECK(a[i].ptr != a[k].ptr);
    }
    pthread_barrier_destroy(&barrier);
}

/* ---- the cgroup CPU quota caps the default thread count ---- */

static void put(const char *dir, const char *name, const char *text) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* A fake /sys/fs/cgroup and /proc/self/cgroup: a container with --cpus=1.5 (v2) counted
 * 64 threads on a 64-core host (ts_cpu_count read the affinity mask only), each one
 * throttled. */
static void test_cgroup_quota(void) {
    char root[] = "/tmp/ts_cgroupXXXXXX", dir[256], proc[300];
    CHECK(mkdtemp(root) != NULL);
    snprintf(proc, sizeof proc, "%s/proc_self_cgroup", root);
    CHECK(tsr_cgroup_cpus(root, "/nonexistent/cgroup") == 0);
    put(root, "proc_self_cgroup", "0::/\n");
    CHECK(tsr_cgroup_cpus(root, proc) == 0); /* no cpu.max: no quota */
    put(root, "cpu.max", "max 100000\n");
    CHECK(tsr_cgroup_cpus(root, proc) == 0);
    put(root, "cpu.max", "150000 100000\n");
    CHECK(tsr_cgroup_cpus(root, proc) == 2); /* 1.5 CPUs: rounded up */
    /* a nested cgroup: the smallest of it and its ancestors */
    snprintf(dir, sizeof dir, "%s/a", root);
    CHECK(mkdir(dir, 0700) == 0);
    snprintf(dir, sizeof dir, "%s/a/b", root);
    CHECK(mkdir(dir, 0700) == 0);
    put(dir, "cpu.max", "400000 100000\n");
    put(root, "proc_self_cgroup", "0::/a/b\n");
    CHECK(tsr_cgroup_cpus(root, proc) == 2);
    put(root, "cpu.max", "max 100000\n");
    CHECK(tsr_cgroup_cpus(root, proc) == 4);
    put(root, "proc_self_cgroup", "0::/host/path/not/mounted\n");
    CHECK(tsr_cgroup_cpus(root, proc) == 0);
    /* v1: cpu,cpuacct controller, quota -1 = none */
    snprintf(dir, sizeof dir, "%s/cpu,cpuacct", root);
    CHECK(mkdir(dir, 0700) == 0);
    put(dir, "cpu.cfs_quota_us", "-1\n");
    put(dir, "cpu.cfs_period_us", "100000\n");
    put(root, "proc_self_cgroup", "4:memory:/x\n3:cpu,cpuacct:/\n1:name=systemd:/\n");
    CHECK(tsr_cgroup_cpus(root, proc) == 0);
    put(dir, "cpu.cfs_quota_us", "300000\n");
    CHECK(tsr_cgroup_cpus(root, proc) == 3);
    put(dir, "cpu.cfs_quota_us", "garbage\n");
    CHECK(tsr_cgroup_cpus(root, proc) == 0);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK(system(cmd) == 0);
    /* this process: at least one, at most the affinity mask */
    CHECK(ts_cpu_count() >= 1);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--print-detection") == 0) return print_detection();
    RUN_TEST(test_isa_names);
    RUN_TEST(test_isa_of_features);
    RUN_TEST(test_cpu_features);
    RUN_TEST(test_isa_resolve);
    RUN_TEST(test_cache_sizes);
    RUN_TEST(test_cgroup_quota);
    RUN_TEST(test_env_overrides);
    RUN_TEST(test_parallel_empty);
    RUN_TEST(test_parallel_sum);
    RUN_TEST(test_parallel_error);
    RUN_TEST(test_parallel_nested);
    RUN_TEST(test_parallel_thread_count);
    RUN_TEST(test_parallel_concurrent);
    RUN_TEST(test_parallel_fork);
    RUN_TEST(test_scratch_growth);
    RUN_TEST(test_scratch_threads);
    return check_summary("test_runtime");
}
