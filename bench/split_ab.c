/* split_ab.c: one row a call on 1 thread against 2 (its trees split), two scorers alternated, each round timed only while the machine is idle (issue 23). */
/*
 * Build:  cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude bench/split_ab.c build/libtreescore.a -lm -lpthread -ldl \
 *             [-L/usr/local/cuda/lib64 -lcudart -lstdc++   (a build with CUDA)] -o /tmp/split_ab
 * Run:    /tmp/split_ab MODEL DATA.f32 [ROUNDS [SECONDS [ENGINE]]]
 * DATA is a raw float32 file (TSRAWF32 header); its first 200 rows are scored, one per
 * call, by an ENGINE (default trees-simd; auto) scorer on 1 thread and one on 2 threads,
 * alternated; a round runs only after 150 ms in which the CPUs were at least 85% idle
 * (/proc/stat), until ROUNDS rounds (default 40) or SECONDS (default 1800) have passed.
 * Prints each round's us per row and the medians. Linux only.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "treescore.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The CPUs' idle share (percent) over ms milliseconds. */
static int idle_percent(int ms) {
    long long t[2] = {0, 0}, idle[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        long long v[8] = {0};
        FILE *f = fopen("/proc/stat", "r");
        if (!f || fscanf(f, "cpu %lld %lld %lld %lld %lld %lld %lld %lld", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                         &v[6], &v[7]) != 8) {
            if (f) fclose(f);
            return 100;
        }
        fclose(f);
        for (int i = 0; i < 8; i++) t[k] += v[i];
        idle[k] = v[3] + v[4];
        if (k == 0) nanosleep(&(struct timespec){0, ms * 1000000L}, NULL);
    }
    return t[1] > t[0] ? (int)(100 * (idle[1] - idle[0]) / (t[1] - t[0])) : 0;
}

int main(int argc, char **argv) {
    if (argc < 3) return fprintf(stderr, "usage: %s MODEL DATA.f32 [ROUNDS [SECONDS [ENGINE]]]\n", argv[0]), 2;
    const int want = argc > 3 ? atoi(argv[3]) : 40;
    const double secs = argc > 4 ? atof(argv[4]) : 1800;
    const ts_engine engine = argc > 5 && !strcmp(argv[5], "auto") ? TS_ENGINE_AUTO : TS_ENGINE_TREES_SIMD;
    ts_model *m = NULL;
    ts_error err;
    if (ts_model_load_file(argv[1], TS_FORMAT_AUTO, &m, &err) != TS_OK) return fprintf(stderr, "%s\n", err.message), 1;
    FILE *f = fopen(argv[2], "rb");
    char magic[8];
    uint32_t version, cols;
    uint64_t n;
    if (!f || fread(magic, 1, 8, f) != 8 || memcmp(magic, "TSRAWF32", 8) || fread(&version, 4, 1, f) != 1 ||
        fread(&cols, 4, 1, f) != 1 || fread(&n, 8, 1, f) != 1)
        return fprintf(stderr, "%s: not a TSRAWF32 file\n", argv[2]), 1;
    const size_t R = n < 200 ? (size_t)n : 200;
    float *x = malloc(R * cols * sizeof *x);
    if (!x || fread(x, sizeof *x, R * cols, f) != R * cols) return fprintf(stderr, "%s: short\n", argv[2]), 1;
    fclose(f);
    ts_scorer *s[2];
    for (int k = 0; k < 2; k++) {
        ts_scorer_options o;
        ts_scorer_options_init(&o);
        o.engine = engine;
        o.n_threads = (unsigned)k + 1;
        if (ts_scorer_create(m, &o, &s[k], &err) != TS_OK) return fprintf(stderr, "%s\n", err.message), 1;
        printf("%u thread%s: %s, splits a row: %d\n", k + 1, k ? "s" : "", ts_engine_name(ts_scorer_engine_for(s[k], 1)),
               ts_scorer_splits_trees(s[k], 1));
    }
    double *out = malloc(R * sizeof *out), *a[2] = {malloc(want * sizeof(double)), malloc(want * sizeof(double))};
    const double end = now() + secs;
    int r = 0;
    while (r < want && now() < end) {
        if (idle_percent(150) < 85) continue;
        for (int k = 0; k < 2; k++) {
            double t0 = now();
            for (size_t i = 0; i < R; i++) ts_scorer_score(s[k], x + i * cols, 1, cols, cols, out + i, &err);
            a[k][r] = (now() - t0) / (double)R * 1e6;
        }
        printf("round %d: 1 thread %.1f us, 2 threads %.1f us\n", r + 1, a[0][r], a[1][r]);
        fflush(stdout);
        r++;
    }
    if (r == 0) return printf("no idle round\n"), 0;
    qsort(a[0], (size_t)r, sizeof(double), cmp_double);
    qsort(a[1], (size_t)r, sizeof(double), cmp_double);
    printf("%d rounds: 1 thread median %.1f us, 2 threads %.1f us: %.2fx\n", r, a[0][r / 2], a[1][r / 2],
           a[0][r / 2] / a[1][r / 2]);
    return 0;
}
