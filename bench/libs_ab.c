/* libs_ab.c: (library build, engine) pairs on the same rows, interleaved per repetition, the minimum us/doc of each and whether their scores agree bit for bit (A/B of two builds). */
/*
 * Build:  cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude bench/libs_ab.c -ldl -o /tmp/libs_ab
 * Run:    /tmp/libs_ab MODEL DATA.f32|DATA.f64 BATCH ROWS REPS f32|f64|both LIB:ENGINE[:LABEL] ...
 *
 * Each LIB (a libtreescore.so: this checkout's build/, another checkout's, a copy of an
 * older one) is opened on its own (RTLD_LOCAL | RTLD_DEEPBIND), so two builds of the same
 * library run side by side in one process. Each pair gets a scorer of ENGINE (a name as
 * in `treescore bench --engines`: auto, rapid, trees-simd, ...) with one thread and the
 * other options at their defaults (auto: the planner on synthetic rows, every range).
 * DATA is a raw float32 file (TSRAWF32 header), or float64 (TSRAWF64: the same header,
 * then doubles, e.g. text rows parsed as doubles; their float32 rows are the doubles
 * rounded to nearest); its first ROWS rows are scored in calls of BATCH rows (f64: the
 * values as doubles, through ts_scorer_score_f64), every
 * pair once per repetition, the order rotated each repetition so that no pair always
 * runs right after another; REPS repetitions. Prints each pair's minimum us/doc (the
 * least disturbed repetition: on a shared virtual machine, medians move with the
 * neighbours), "DIFFERENT" where its scores are not those of the first pair bit for
 * bit, and the first pair's speedup over the fastest of the others. `both` instead of
 * f32|f64 runs every pair on both, interleaved ("LABEL/f64": float64 rows' speed against
 * float32's in one process; bits checked against the first pair of the same rows). For
 * an auto pair, the engine its calls of BATCH rows take after the run (a contested
 * range's trial may have chosen it: scorer/trial.h) ends the output. With LIBS_AB_SAMPLE=FILE
 * (a raw file as DATA, say other rows of the same data) every pair's scorer gets FILE's
 * first 4,096 rows as ts_scorer_options.sample (the planner's rows, and rapid's leaf
 * order: rapid.h "Leaf order"), as the CLI and the Python package pass their callers'. Linux only.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "treescore.h"

#define MAX_PAIRS 16

typedef ts_status (*load_fn)(const char *, ts_model_format, ts_model **, ts_error *);
typedef void (*options_fn)(ts_scorer_options *);
typedef ts_status (*create_fn)(const ts_model *, const ts_scorer_options *, ts_scorer **, ts_error *);
typedef ts_status (*score_fn)(const ts_scorer *, const float *, size_t, size_t, size_t, double *, ts_error *);
typedef ts_status (*score_f64_fn)(const ts_scorer *, const double *, size_t, size_t, size_t, double *, ts_error *);
typedef ts_status (*engine_fn)(const char *, ts_engine *);
typedef ts_engine (*engine_for_fn)(const ts_scorer *, size_t);
typedef const char *(*engine_name_fn)(ts_engine);

typedef struct pair {
    char label[64];
    ts_scorer *scorer;
    score_fn score;
    score_f64_fn score_f64;
    int f64; /* float64 rows (ts_scorer_score_f64) */
    int is_auto;
    engine_for_fn engine_for;
    engine_name_fn engine_name;
    double best;
    double *out;
} pair;

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + 1e-3 * (double)t.tv_nsec;
}

/* The raw float32 file: header "TSRAWF32", version, columns (u32), rows (u64), then rows. */
/* A raw matrix as doubles: a TSRAWF32 file (its floats widened), or a TSRAWF64 one (the
 * same header, then doubles: rows read as doubles, e.g. parsed text, whose float32 rows
 * are then the doubles rounded to nearest, as strtof would give). */
static double *read_raw(const char *path, uint32_t *cols, size_t *rows) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char head[24];
    double *x = NULL;
    uint64_t n = 0;
    int is64 = 0;
    if (fread(head, 1, sizeof head, f) == sizeof head &&
        (memcmp(head, "TSRAWF32", 8) == 0 || (is64 = memcmp(head, "TSRAWF64", 8) == 0))) {
        memcpy(cols, head + 12, 4);
        memcpy(&n, head + 16, 8);
        const size_t count = (size_t)n * *cols, size = is64 ? sizeof(double) : sizeof(float);
        x = *cols && n ? malloc(count * sizeof *x) : NULL;
        if (x && fread(x, size, count, f) != count) {
            free(x);
            x = NULL;
        }
        if (x && !is64) /* widened in place, from the end */
            for (size_t i = count; i-- > 0;) {
                float v;
                memcpy(&v, (char *)x + i * sizeof v, sizeof v);
                x[i] = v;
            }
    }
    fclose(f);
    *rows = (size_t)n;
    return x;
}

/* LIBS_AB_SAMPLE's rows (float32), or NULL. */
static const float *sample;
static size_t sample_rows;
static uint32_t sample_cols;

static int open_pair(const char *spec, const char *model_path, pair *p) {
    char s[512];
    snprintf(s, sizeof s, "%s", spec);
    char *engine = strchr(s, ':');
    if (!engine) return fprintf(stderr, "libs_ab: %s: want LIB:ENGINE[:LABEL]\n", spec), 0;
    *engine++ = 0;
    char *label = strchr(engine, ':');
    if (label) *label++ = 0;
    snprintf(p->label, sizeof p->label, "%s", label ? label : engine);
    void *h = dlopen(s, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!h) return fprintf(stderr, "libs_ab: %s\n", dlerror()), 0;
    load_fn load = (load_fn)dlsym(h, "ts_model_load_file");
    options_fn init = (options_fn)dlsym(h, "ts_scorer_options_init");
    create_fn create = (create_fn)dlsym(h, "ts_scorer_create");
    engine_fn by_name = (engine_fn)dlsym(h, "ts_engine_from_name");
    p->score = (score_fn)dlsym(h, "ts_scorer_score");
    p->score_f64 = (score_f64_fn)dlsym(h, "ts_scorer_score_f64");
    p->engine_for = (engine_for_fn)dlsym(h, "ts_scorer_engine_for");
    p->engine_name = (engine_name_fn)dlsym(h, "ts_engine_name");
    p->is_auto = strcmp(engine, "auto") == 0;
    if (!load || !init || !create || !by_name || !p->score || !p->score_f64)
        return fprintf(stderr, "libs_ab: %s: not a treescore library\n", s), 0;
    ts_error err;
    memset(&err, 0, sizeof err);
    ts_model *m = NULL;
    ts_scorer_options o;
    init(&o);
    o.n_threads = 1;
    o.sample = sample, o.sample_rows = sample_rows, o.sample_stride = sample_cols;
    if (by_name(engine, &o.engine) != TS_OK) return fprintf(stderr, "libs_ab: no engine %s\n", engine), 0;
    if (load(model_path, TS_FORMAT_AUTO, &m, &err) != TS_OK || create(m, &o, &p->scorer, &err) != TS_OK)
        return fprintf(stderr, "libs_ab: %s: %s\n", spec, err.message), 0;
    /* the model stays loaded for the process's life, as the scorer may refer to it */
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 8 || argc - 7 > MAX_PAIRS) {
        fprintf(stderr, "usage: libs_ab MODEL DATA.f32|DATA.f64 BATCH ROWS REPS f32|f64|both LIB:ENGINE[:LABEL] ... (at most %d)\n",
                MAX_PAIRS);
        return 2;
    }
    const size_t batch = strtoul(argv[3], NULL, 10);
    size_t rows = strtoul(argv[4], NULL, 10);
    /* both: every pair twice, as float32 rows and as float64 rows ("LABEL/f64") */
    const int reps = atoi(argv[5]), both = strcmp(argv[6], "both") == 0, n = (argc - 7) * (both ? 2 : 1);
    if (n > MAX_PAIRS) return fprintf(stderr, "libs_ab: at most %d pairs\n", MAX_PAIRS), 2;
    uint32_t cols = 0;
    size_t have = 0;
    double *xd = read_raw(argv[2], &cols, &have);
    if (!xd || batch == 0 || reps < 1) return fprintf(stderr, "libs_ab: %s: not a raw float32 or float64 file\n", argv[2]), 1;
    const char *sample_path = getenv("LIBS_AB_SAMPLE");
    if (sample_path && *sample_path) {
        size_t n = 0;
        double *sd = read_raw(sample_path, &sample_cols, &n);
        if (!sd || n == 0) return fprintf(stderr, "libs_ab: LIBS_AB_SAMPLE=%s: not a raw float32 or float64 file\n", sample_path), 1;
        sample_rows = n < 4096 ? n : 4096;
        float *sf = malloc(sample_rows * sample_cols * sizeof *sf);
        if (!sf) return fprintf(stderr, "libs_ab: out of memory\n"), 1;
        for (size_t i = 0; i < sample_rows * sample_cols; i++) sf[i] = (float)sd[i];
        free(sd);
        sample = sf;
    }
    rows = rows < have ? rows : have;
    rows -= rows % batch;
    if (rows == 0) return fprintf(stderr, "libs_ab: fewer rows than one batch\n"), 1;
    float *x = malloc(rows * cols * sizeof *x);
    if (!x) return 1;
    for (size_t i = 0; i < rows * cols; i++) x[i] = (float)xd[i];
    pair p[MAX_PAIRS];
    for (int i = 0; i < n; i++) {
        const int half = both ? n / 2 : n;
        if (!open_pair(argv[7 + i % half], argv[1], &p[i])) return 1;
        p[i].f64 = both ? i >= half : strcmp(argv[6], "f64") == 0;
        if (both && p[i].f64) strncat(p[i].label, "/f64", sizeof p[i].label - strlen(p[i].label) - 1);
        p[i].best = 1e300;
        p[i].out = malloc(rows * sizeof *p[i].out);
        if (!p[i].out) return 1;
    }
    ts_error err;
    for (int r = 0; r < reps; r++)
        for (int k = 0; k < n; k++) {
            pair *q = &p[(k + r) % n];
            const double t0 = now_us();
            for (size_t i = 0; i < rows; i += batch) {
                ts_status st = q->f64 ? q->score_f64(q->scorer, xd + i * cols, batch, cols, cols, q->out + i, &err)
                                   : q->score(q->scorer, x + i * cols, batch, cols, cols, q->out + i, &err);
                if (st != TS_OK) return fprintf(stderr, "libs_ab: %s: %s\n", q->label, err.message), 1;
            }
            const double t = (now_us() - t0) / (double)rows;
            if (t < q->best) q->best = t;
        }
    int fastest = n > 1 ? 1 : 0;
    for (int i = 0; i < n; i++) {
        const pair *first = &p[both && p[i].f64 ? n / 2 : 0]; /* the same rows' first pair */
        printf("%-20s %10.4f us/doc%s\n", p[i].label, p[i].best,
               memcmp(p[i].out, first->out, rows * sizeof *first->out) ? "  DIFFERENT" : "");
        if (i > 0 && p[i].best < p[fastest].best) fastest = i;
    }
    if (n > 1)
        printf("%s: %.2fx the fastest of the others (%s), minima of %d repetitions, %zu rows in calls of %zu\n",
               p[0].label, p[fastest].best / p[0].best, p[fastest].label, reps, rows, batch);
    for (int i = 0; i < n; i++) /* auto: its engine for these calls after them (a trial may have chosen it) */
        if (p[i].is_auto && p[i].engine_for && p[i].engine_name)
            printf("%s: engine for calls of %zu rows: %s\n", p[i].label, batch,
                   p[i].engine_name(p[i].engine_for(p[i].scorer, batch)));
    return 0;
}
