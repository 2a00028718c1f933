/* test_stress.c: load test: 64 threads share one scorer (random batch sizes 1-5,000, float and double rows) while other threads create and free scorers, for a fixed time; every score must equal a single-threaded run's. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "treescore.h"

/*
 * Public API only. Duration: argv[1] or the environment variable TS_STRESS_SECONDS
 * (seconds, default 2: the ctest run, under ThreadSanitizer in make test); the long run
 * is `test_stress 600`. Runs past 10 s print the resident memory every 10 s and check
 * that it does not grow by more than RSS_GROWTH_MIB after the first minute.
 *
 * Invariants checked: every call succeeds; every score of every call, on any thread, is
 * bit-identical to the single-threaded score of the same row (float rows and double
 * rows each against their own reference); scorers created and freed on other threads
 * meanwhile (every explicit engine but ifelse, whose compile would dominate, and auto
 * by rule) score their rows identically too.
 */

#define SCORING_THREADS 64
#define CHURN_THREADS 4
#define MAX_BATCH 5000
#define N_ROWS 20000
#define RSS_GROWTH_MIB 32.0

typedef struct shared {
    const ts_model *model;
    const ts_scorer *scorer;   /* the one all scoring threads share */
    const float *x;            /* N_ROWS x cols */
    const double *xd;          /* the same values as doubles */
    size_t cols;
    uint32_t k;                /* outputs per row */
    const double *want;        /* single-threaded scores of x (N_ROWS x k) */
    const double *want_d;      /* single-threaded ts_scorer_score_f64 of xd */
    double deadline;
} shared;

typedef struct worker {
    const shared *sh;
    unsigned id;
    uint64_t calls, rows, failures, mismatches;
} worker;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t next_rand(uint64_t *s) { /* xorshift64* */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1Dull;
}

/* Mismatching scores of rows [start, start + n) against want. */
static uint64_t compare(const double *got, const double *want, size_t start, size_t n, uint32_t k) {
    return memcmp(got, want + start * k, n * k * sizeof *got) != 0;
}

static void *score_loop(void *p) {
    worker *w = p;
    const shared *sh = w->sh;
    uint64_t seed = 0x9E3779B97F4A7C15ull * (w->id + 1);
    double *out = malloc((size_t)MAX_BATCH * sh->k * sizeof *out);
    ts_error err;
    if (!out) {
        w->failures++;
        return NULL;
    }
    while (now_s() < sh->deadline) {
        size_t n = 1 + (size_t)(next_rand(&seed) % MAX_BATCH);
        size_t start = (size_t)(next_rand(&seed) % (N_ROWS - n + 1));
        int doubles = (next_rand(&seed) & 3) == 0; /* a quarter of the calls: rows of doubles */
        ts_status st = doubles ? ts_scorer_score_f64(sh->scorer, sh->xd + start * sh->cols, n, sh->cols, sh->cols,
                                                     out, &err)
                               : ts_scorer_score(sh->scorer, sh->x + start * sh->cols, n, sh->cols, sh->cols, out,
                                                 &err);
        if (st != TS_OK) w->failures++;
        else w->mismatches += compare(out, doubles ? sh->want_d : sh->want, start, n, sh->k);
        w->calls++;
        w->rows += n;
    }
    free(out);
    return NULL;
}

/* Creates a scorer (engine and thread count varying), scores a random slice, frees it. */
static void *churn_loop(void *p) {
    static const ts_engine engines[] = {TS_ENGINE_NAIVE,       TS_ENGINE_QS,          TS_ENGINE_VQS,   TS_ENGINE_VPRED,
                                        TS_ENGINE_BLOCK_NAIVE, TS_ENGINE_BLOCK_VPRED, TS_ENGINE_RAPID, TS_ENGINE_OBLIVIOUS,
                                        TS_ENGINE_AUTO};
    worker *w = p;
    const shared *sh = w->sh;
    uint64_t seed = 0xD1B54A32D192ED03ull * (w->id + 1);
    double *out = malloc((size_t)MAX_BATCH * sh->k * sizeof *out);
    if (!out) {
        w->failures++;
        return NULL;
    }
    do { /* at least once, however starved this thread is by the scoring ones */
        ts_scorer_options o;
        ts_scorer_options_init(&o);
        o.engine = engines[next_rand(&seed) % (sizeof engines / sizeof engines[0])];
        o.plan = TS_PLAN_RULE; /* auto: no timing, no wisdom file */
        o.n_threads = 1 + (unsigned)(next_rand(&seed) % 3);
        ts_scorer *s = NULL;
        ts_error err;
        if (ts_scorer_create(sh->model, &o, &s, &err) != TS_OK) {
            w->failures++;
            continue;
        }
        size_t n = 1 + (size_t)(next_rand(&seed) % 500);
        size_t start = (size_t)(next_rand(&seed) % (N_ROWS - n + 1));
        if (ts_scorer_score(s, sh->x + start * sh->cols, n, sh->cols, sh->cols, out, &err) != TS_OK) w->failures++;
        else w->mismatches += compare(out, sh->want, start, n, sh->k);
        w->calls++;
        w->rows += n;
        ts_scorer_free(s);
    } while (now_s() < sh->deadline);
    free(out);
    return NULL;
}

/* Resident memory in MiB (/proc/self/statm; 0 where there is none). */
static double rss_mib(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, resident = 0;
    if (!f) return 0;
    if (fscanf(f, "%lu %lu", &size, &resident) != 2) resident = 0;
    fclose(f);
    return (double)resident * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0);
}

static void fill_rows(float *x, double *xd, size_t n) {
    uint64_t seed = 42;
    for (size_t i = 0; i < n; i++) {
        uint64_t r = next_rand(&seed);
        float v = r % 23 == 0 ? NAN : (float)((double)(r >> 11) / 9007199254740992.0 * 12.0 - 4.0);
        x[i] = v;
        xd[i] = isnan(v) ? NAN : (double)v + (double)((r >> 3) & 7) * 1e-9; /* off the float grid too */
    }
}

/* Runs the scorers for `seconds` and checks what they returned. */
static void stress(const char *path, ts_engine engine, double seconds) {
    ts_model *m = NULL;
    ts_error err;
    CHECK_STATUS(ts_model_load_file(path, TS_FORMAT_AUTO, &m, &err), TS_OK);
    if (!m) return;
    ts_model_info info;
    ts_model_get_info(m, &info, NULL);
    shared sh = {.model = m, .cols = info.n_features, .k = info.n_outputs ? info.n_outputs : 1};
    float *x = malloc((size_t)N_ROWS * sh.cols * sizeof *x);
    double *xd = malloc((size_t)N_ROWS * sh.cols * sizeof *xd);
    double *want = malloc((size_t)N_ROWS * sh.k * sizeof *want);
    double *want_d = malloc((size_t)N_ROWS * sh.k * sizeof *want_d);
    ts_scorer *ref = NULL, *s = NULL;
    ts_scorer_options o;
    ts_scorer_options_init(&o);
    o.engine = TS_ENGINE_NAIVE;
    o.n_threads = 1;
    CHECK(x && xd && want && want_d);
    if (!x || !xd || !want || !want_d) goto done;
    fill_rows(x, xd, (size_t)N_ROWS * sh.cols);
    /* the single-threaded reference: naive on one thread (every engine equals it) */
    CHECK_STATUS(ts_scorer_create(m, &o, &ref, &err), TS_OK);
    if (!ref) goto done;
    CHECK_STATUS(ts_scorer_score(ref, x, N_ROWS, sh.cols, sh.cols, want, &err), TS_OK);
    CHECK_STATUS(ts_scorer_score_f64(ref, xd, N_ROWS, sh.cols, sh.cols, want_d, &err), TS_OK);
    o.engine = engine;
    o.n_threads = 2; /* every call also splits over the shared pool */
    CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_OK);
    if (!s) goto done;
    sh.scorer = s;
    sh.x = x;
    sh.xd = xd;
    sh.want = want;
    sh.want_d = want_d;
    double t0 = now_s();
    sh.deadline = t0 + seconds;

    worker w[SCORING_THREADS + CHURN_THREADS];
    pthread_t th[SCORING_THREADS + CHURN_THREADS];
    int started = 0;
    for (int i = 0; i < SCORING_THREADS + CHURN_THREADS; i++) {
        w[i] = (worker){.sh = &sh, .id = (unsigned)i};
        if (pthread_create(&th[i], NULL, i < SCORING_THREADS ? score_loop : churn_loop, &w[i]) != 0) break;
        started++;
    }
    CHECK_MSG(started == SCORING_THREADS + CHURN_THREADS, "only %d threads started", started);
    /* resident memory: every 10 s on long runs; growth measured from the first minute */
    double rss_first_minute = 0, rss_max_after = 0, next_print = t0 + 10;
    while (seconds > 10 && now_s() < sh.deadline) {
        nanosleep(&(struct timespec){0, 200 * 1000 * 1000}, NULL);
        double t = now_s(), rss = rss_mib();
        if (t - t0 < 60) rss_first_minute = rss;
        else if (rss > rss_max_after) rss_max_after = rss;
        if (t >= next_print) {
            fprintf(stderr, "stress %s: t=%4.0f s rss=%.1f MiB\n", ts_engine_name(engine), t - t0, rss);
            next_print += 10;
        }
    }
    uint64_t calls = 0, rows = 0, failures = 0, mismatches = 0, churn_calls = 0;
    for (int i = 0; i < started; i++) {
        pthread_join(th[i], NULL);
        calls += w[i].calls;
        rows += w[i].rows;
        failures += w[i].failures;
        mismatches += w[i].mismatches;
        if (i >= SCORING_THREADS) churn_calls += w[i].calls;
    }
    fprintf(stderr,
            "stress %s (%s): %.0f s, %d+%d threads, %llu calls (%llu by scorers created meanwhile), %llu rows, "
            "%llu failed, %llu mismatching\n",
            ts_engine_name(engine), path, now_s() - t0, SCORING_THREADS, CHURN_THREADS, (unsigned long long)calls,
            (unsigned long long)churn_calls, (unsigned long long)rows, (unsigned long long)failures,
            (unsigned long long)mismatches);
    if (seconds > 60)
        fprintf(stderr, "stress %s: resident memory %.1f MiB after the first minute, at most %.1f MiB later\n",
                ts_engine_name(engine), rss_first_minute, rss_max_after);
    CHECK(calls > 0);
    CHECK(churn_calls > 0);
    CHECK_MSG(failures == 0, "%llu calls failed", (unsigned long long)failures);
    CHECK_MSG(mismatches == 0, "%llu calls gave scores that differ from the single-threaded run",
              (unsigned long long)mismatches);
    if (seconds >= 120)
        CHECK_MSG(rss_max_after <= rss_first_minute + RSS_GROWTH_MIB,
                  "resident memory grew from %.1f MiB (first minute) to %.1f MiB", rss_first_minute, rss_max_after);
done:
    ts_scorer_free(s);
    ts_scorer_free(ref);
    ts_model_free(m);
    free(x);
    free(xd);
    free(want);
    free(want_d);
}

static double seconds_ = 2;

static void test_stress_lightgbm(void) {
    stress(TS_TEST_DATA_DIR "/models/lgb_small_lambdarank.txt", TS_ENGINE_VQS, seconds_);
}

static void test_stress_xgboost(void) {
    stress(TS_TEST_DATA_DIR "/models/xgb_small_logistic.json", TS_ENGINE_BLOCK_VPRED, seconds_);
}

static void test_stress_rapid(void) {
    stress(TS_TEST_DATA_DIR "/models/lgb_small_lambdarank.txt", TS_ENGINE_RAPID, seconds_);
}

int main(int argc, char **argv) {
    const char *env = getenv("TS_STRESS_SECONDS");
    const char *arg = argc > 1 ? argv[1] : env;
    if (arg) {
        char *end;
        double v = strtod(arg, &end);
        if (*end || !(v > 0) || v > 86400) {
            fprintf(stderr, "test_stress: SECONDS must be a number of seconds from 0 to 86400, not '%s'\n", arg);
            return 2;
        }
        seconds_ = v;
    }
    /* the long run stresses one model for the whole time; the short one both, and rapid */
    RUN_TEST(test_stress_lightgbm);
    if (seconds_ <= 10) RUN_TEST(test_stress_xgboost);
    if (seconds_ <= 10) RUN_TEST(test_stress_rapid);
    return check_summary("test_stress");
}
