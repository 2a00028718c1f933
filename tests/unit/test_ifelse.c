/* test_ifelse.c: the compiled ifelse engine equals naive bit for bit; its on-disk cache, compiler discovery and error paths. */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "engines/ifelse_codegen.h"
#include "model/forest.h"
#include "platform/cc.h"
#include "platform/clock.h"
#include "platform/config.h"
#include "random_forest.h"
#include "treescore.h"

/* Rows are N_FEATURES wide: random_forest.h's default feature count. */
#define N_FEATURES 12

static void chain_tree(uint32_t n_nodes, tsm_node *nodes, double *leaves) {
    for (uint32_t i = 0; i < n_nodes; i++) {
        random_node(&nodes[i]);
        nodes[i].left = ~(int32_t)i;
        nodes[i].right = i + 1 < n_nodes ? (int32_t)(i + 1) : ~(int32_t)n_nodes;
        if (rnd_below(2)) { /* the chain goes left sometimes */
            int32_t t = nodes[i].left;
            nodes[i].left = nodes[i].right;
            nodes[i].right = t;
        }
    }
    for (uint32_t j = 0; j <= n_nodes; j++) leaves[j] = (double)(int)rnd_below(2001) / 8.0 - 125.0;
}

static void add_tree(ts_model *m, uint32_t n_leaves, const tsm_node *nodes, const double *leaves, double w) {
    ts_error err;
    CHECK_STATUS(tsm_model_add_tree(m, n_leaves - 1, nodes, n_leaves, leaves, w, &err), TS_OK);
}

/* n_random trees of 1..max_leaves leaves, then extras: a chain deeper than
 * TSIF_NEST_MAX and a tree of more than TSIF_PART_NODES nodes (both cut into subtree
 * functions), a one-leaf tree, a tree whose weight * leaf overflows to +-inf. */
static ts_model *make_model(uint32_t n_random, uint32_t max_leaves, int extras) {
    ts_model *m = tsm_model_new(TS_FORMAT_LIGHTGBM);
    uint32_t cap = max_leaves > 2 * TSIF_PART_NODES ? max_leaves : 2 * TSIF_PART_NODES;
    tsm_node *nodes = malloc(cap * sizeof *nodes);
    double *leaves = malloc(cap * sizeof *leaves);
    for (uint32_t t = 0; t < n_random; t++) {
        uint32_t L = 1 + rnd_below(max_leaves);
        random_tree(L, 0, nodes, leaves);
        add_tree(m, L, nodes, leaves, rnd_below(3) == 0 ? 0.1 : 1.0);
        if (extras && t == n_random / 2) {
            chain_tree(TSIF_NEST_MAX + 50, nodes, leaves);
            add_tree(m, TSIF_NEST_MAX + 51, nodes, leaves, 1.0);
            random_tree(TSIF_PART_NODES + 300, 0, nodes, leaves);
            add_tree(m, TSIF_PART_NODES + 300, nodes, leaves, 1.0);
            leaves[0] = 3.25;
            add_tree(m, 1, nodes, leaves, 0.3);
            random_tree(3, 0, nodes, leaves);
            leaves[0] = 1e200;
            leaves[1] = -1e200;
            add_tree(m, 3, nodes, leaves, 1e200);
        }
    }
    return finish_random_model(m, nodes, leaves);
}

static ts_status create(const ts_model *m, ts_engine engine, unsigned threads, ts_scorer **s, ts_error *err) {
    ts_scorer_options o;
    ts_scorer_options_init(&o);
    o.engine = engine;
    o.n_threads = threads;
    return ts_scorer_create(m, &o, s, err);
}

/* ifelse (1 and 3 threads) against naive on n_rows random rows; returns mismatches. */
static size_t compare_with_naive(const ts_model *m, size_t n_rows) {
    const size_t cols = N_FEATURES + 2, stride = cols + 3;
    float *x = malloc(n_rows * stride * sizeof *x);
    double *ref = malloc(n_rows * sizeof *ref), *got = malloc(n_rows * sizeof *got);
    for (size_t i = 0; i < n_rows * stride; i++) x[i] = random_value();
    ts_error err;
    ts_scorer *naive = NULL, *ie = NULL;
    size_t bad = 0;
    CHECK_STATUS(create(m, TS_ENGINE_NAIVE, 1, &naive, &err), TS_OK);
    CHECK_STATUS(ts_scorer_score(naive, x, n_rows, cols, stride, ref, &err), TS_OK);
    for (unsigned threads = 1; threads <= 3; threads += 2) {
        ts_status st = create(m, TS_ENGINE_IFELSE, threads, &ie, &err);
        CHECK_MSG(st == TS_OK, "ifelse prepare: %s", err.message);
        if (st != TS_OK) {
            bad++;
            break;
        }
        CHECK(ts_scorer_engine(ie) == TS_ENGINE_IFELSE);
        for (size_t r = 0; r < n_rows; r++) got[r] = -12345.0;
        CHECK_STATUS(ts_scorer_score(ie, x, n_rows, cols, stride, got, &err), TS_OK);
        for (size_t r = 0; r < n_rows; r++)
            if (memcmp(&got[r], &ref[r], sizeof got[r]) != 0 && bad++ < 3)
                fprintf(stderr, "threads %u row %zu: ifelse %.17g != naive %.17g\n", threads, r, got[r], ref[r]);
        ts_scorer_free(ie);
    }
    ts_scorer_free(naive);
    free(x);
    free(ref);
    free(got);
    return bad;
}

/* ---- the cache directory -------------------------------------------------------------- */

static char cache_root[TSR_PATH_MAX];

/* A fresh empty cache directory under cache_root, set as TREESCORE_CACHE_DIR. */
static void fresh_cache(char *dir, size_t size) {
    CHECK(tsr_make_temp_dir(cache_root, "c", dir, size) == 0);
    setenv("TREESCORE_CACHE_DIR", dir, 1);
    tsr_config_reload();
}

/* Counts entries of dir whose name starts with prefix (0 when dir is missing). */
static int count_entries(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0 && strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

/* The path of the one ifelse-*.so in dir. */
static int cached_object(const char *dir, char *path, size_t size) {
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strncmp(e->d_name, "ifelse-", 7) == 0) {
            snprintf(path, size, "%s/%s", dir, e->d_name);
            n++;
        }
    closedir(d);
    return n == 1;
}

static void write_file(const char *path, const char *text, int mode) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
    chmod(path, (mode_t)mode);
}

/* ---- tests ---------------------------------------------------------------------------- */

static int have_compiler = 1;
static char *user_cc; /* TREESCORE_CC as the test was started (e.g. clang), or NULL */

static void restore_cc(void) {
    if (user_cc) setenv("TREESCORE_CC", user_cc, 1);
    else unsetenv("TREESCORE_CC");
    tsr_config_reload();
}

static void test_hex_literals(void) {
    char b[64];
    tsif_hex_double(12.0, b);
    CHECK(strcmp(b, "0x1.8p+3") == 0);
    tsif_hex_double(-0.0, b);
    CHECK(strcmp(b, "-0x0p+0") == 0);
    tsif_hex_double(1.0, b);
    CHECK(strcmp(b, "0x1p+0") == 0);
    tsif_hex_double(4.9406564584124654e-324, b);
    CHECK(strcmp(b, "0x0.0000000000001p-1022") == 0);
    static const double v[] = {0.1, -3.5e-300, 1.7976931348623157e308, 2.2250738585072014e-308, 1e-310, 1e-35};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        tsif_hex_double(v[i], b);
        CHECK_MSG(strtod(b, NULL) == v[i], "%s", b);
    }
}

/* The plan: parts cover the trees in order, no function exceeds TSIF_PART_NODES, the
 * chain and the big tree are cut, files hold consecutive units. */
static void test_plan(void) {
    ts_model *m = make_model(200, 24, 1);
    tsif_plan p;
    ts_error err;
    CHECK_STATUS(tsif_plan_make(m, 700, &p, &err), TS_OK);
    uint32_t next_tree = 0, next_part = 0, cut_units = 0, cut_trees = 0;
    for (uint32_t u = 0; u < p.n_units; u++) {
        const tsif_unit *un = &p.units[u];
        CHECK(un->nodes <= TSIF_PART_NODES);
        if (un->node >= 0) {
            cut_units++;
            CHECK(p.cuts[un->tree] && p.cuts[un->tree][un->node]);
            continue;
        }
        CHECK(un->part == next_part++ && un->tree == next_tree && un->end > un->tree);
        next_tree = un->end;
    }
    for (uint32_t t = 0; t < m->n_trees; t++) cut_trees += p.cuts[t] != NULL;
    CHECK(next_tree == m->n_trees && next_part == p.n_parts && p.n_parts > 3);
    CHECK(cut_trees == 2 && cut_units >= 3);
    CHECK(p.n_files > 5 && p.file_first[0] == 0 && p.file_first[p.n_files] == p.n_units);
    for (uint32_t f = 0; f < p.n_files; f++) CHECK(p.file_first[f] < p.file_first[f + 1]);
    tsif_plan_free(&p);
    ts_model_free(m);
}

static void test_no_compiler(void) {
    char dir[TSR_PATH_MAX];
    fresh_cache(dir, sizeof dir);
    setenv("TREESCORE_CC", "/nonexistent/cc", 1);
    tsr_config_reload();
    ts_model *m = make_model(3, 5, 0);
    ts_scorer *s = NULL;
    ts_error err;
    CHECK_STATUS(create(m, TS_ENGINE_IFELSE, 1, &s, &err), TS_ERR_ENGINE_UNAVAILABLE);
    CHECK(s == NULL);
    CHECK_MSG(strstr(err.message, "/nonexistent/cc") && strstr(err.message, "gcc or clang"), "%s", err.message);
    setenv("TREESCORE_CC", "no-such-compiler-xyz", 1);
    tsr_config_reload();
    CHECK_STATUS(create(m, TS_ENGINE_IFELSE, 1, &s, &err), TS_ERR_ENGINE_UNAVAILABLE);
    CHECK_MSG(strstr(err.message, "no-such-compiler-xyz") && strstr(err.message, "PATH"), "%s", err.message);
    restore_cc();
    CHECK(count_entries(dir, "") == 0);
    ts_model_free(m);
    /* Is there a compiler at all? Without one the other tests cannot run. */
    tsr_cc cc;
    have_compiler = tsr_cc_find(&cc, &err) == TS_OK;
    if (!have_compiler) fprintf(stderr, "no C compiler (%s): skipping the compiling tests\n", err.message);
}

/* Random forests with every kind of split, many small parts, a goto-form chain, one-leaf
 * trees, infinite leaf products; rows with NaN, +-0, +-inf, values on thresholds. */
static void test_exact_multi_part(void) {
    char dir[TSR_PATH_MAX];
    fresh_cache(dir, sizeof dir);
    setenv("TREESCORE_IFELSE_FILE_NODES", "700", 1);
    tsr_config_reload();
    ts_model *m = make_model(200, 24, 1);
    CHECK(compare_with_naive(m, 700) == 0);
    unsetenv("TREESCORE_IFELSE_FILE_NODES");
    tsr_config_reload();
    CHECK(count_entries(dir, "ifelse-") == 1);
    CHECK(count_entries(dir, ".tmp") == 0);
    ts_model_free(m);
}

static void test_exact_small_models(void) {
    char dir[TSR_PATH_MAX];
    fresh_cache(dir, sizeof dir);
    ts_model *one_leaf = make_model(7, 1, 0);
    CHECK(compare_with_naive(one_leaf, 20) == 0);
    ts_model_free(one_leaf);
    ts_model *wide = make_model(6, 300, 0);
    CHECK(compare_with_naive(wide, 500) == 0);
    ts_model_free(wide);
    ts_model *empty = tsm_model_new(TS_FORMAT_XGBOOST_JSON);
    empty->base_score = -0.25;
    empty->n_features_declared = 4;
    ts_error err;
    if (tsm_model_finish(empty, &err) == TS_OK) CHECK(compare_with_naive(empty, 5) == 0);
    ts_model_free(empty);
}

/* A second prepare is a cache hit: it needs no compiler, writes nothing. */
static void test_cache_hit(void) {
    char dir[TSR_PATH_MAX];
    fresh_cache(dir, sizeof dir);
    ts_model *m = make_model(20, 10, 0);
    ts_scorer *s = NULL;
    ts_error err;
    CHECK_STATUS(create(m, TS_ENGINE_IFELSE, 1, &s, &err), TS_OK);
    ts_scorer_free(s);
    char so[TSR_PATH_MAX + 64];
    CHECK(cached_object(dir, so, sizeof so));
    struct stat before, after;
    CHECK(stat(so, &before) == 0);
    setenv("TREESCORE_CC", "/nonexistent", 1);
    tsr_config_reload();
    CHECK(compare_with_naive(m, 50) == 0);
    restore_cc();
    double t0 = tsr_now();
    CHECK_STATUS(create(m, TS_ENGINE_IFELSE, 1, &s, &err), TS_OK);
    double hit_s = tsr_now() - t0;
    CHECK_MSG(hit_s < 0.05, "a cache hit took %.3f s", hit_s);
    ts_scorer_free(s);
    CHECK(stat(so, &after) == 0 && after.st_ino == before.st_ino && after.st_mtime == before.st_mtime);
    CHECK(count_entries(dir, "") == 1);
    ts_model_free(m);
}

/* Garbage in the cache file, or another model's object under this model's name: the
 * object is rejected and rebuilt. */
static void test_corrupt_and_foreign_cache(void) {
    char dir[TSR_PATH_MAX], so_a[TSR_PATH_MAX + 64], so_b[TSR_PATH_MAX + 64];
    fresh_cache(dir, sizeof dir);
    ts_model *a = make_model(10, 8, 0), *b = make_model(11, 8, 0);
    ts_scorer *s = NULL;
    ts_error err;
    CHECK_STATUS(create(a, TS_ENGINE_IFELSE, 1, &s, &err), TS_OK);
    ts_scorer_free(s);
    CHECK(cached_object(dir, so_a, sizeof so_a));
    write_file(so_a, "this is not an ELF file\n", 0644);
    CHECK(compare_with_naive(a, 100) == 0); /* rebuilt */
    char head[4] = {0};
    FILE *f = fopen(so_a, "rb");
    CHECK(f && fread(head, 1, 4, f) == 4 && memcmp(head, "\177ELF", 4) == 0);
    if (f) fclose(f);
    /* b's object name, a's object content */
    char dir_b[TSR_PATH_MAX];
    fresh_cache(dir_b, sizeof dir_b);
    CHECK_STATUS(create(b, TS_ENGINE_IFELSE, 1, &s, &err), TS_OK);
    ts_scorer_free(s);
    CHECK(cached_object(dir_b, so_b, sizeof so_b));
    char cmd[3 * TSR_PATH_MAX];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", so_a, so_b);
    CHECK(system(cmd) == 0);
    CHECK(compare_with_naive(b, 100) == 0);
    CHECK(count_entries(dir_b, "") == 1);
    ts_model_free(a);
    ts_model_free(b);
}

/* Threads preparing one model at once into one empty cache: each builds in its own
 * directory and renames its object into place; all succeed, one object stays. */
typedef struct racer {
    const ts_model *m;
    ts_status st;
    double score;
} racer;

static void *race(void *p) {
    racer *r = p;
    ts_scorer *s = NULL;
    ts_error err;
    float row[N_FEATURES] = {0};
    r->st = create(r->m, TS_ENGINE_IFELSE, 1, &s, &err);
    if (r->st == TS_OK) r->st = ts_scorer_score(s, row, 1, N_FEATURES, N_FEATURES, &r->score, &err);
    ts_scorer_free(s);
    return NULL;
}

static void test_concurrent_prepare(void) {
    char dir[TSR_PATH_MAX];
    fresh_cache(dir, sizeof dir);
    ts_model *m = make_model(30, 12, 0);
    racer r[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        r[i] = (racer){m, TS_ERR_GENERIC, 0.0};
        CHECK(pthread_create(&th[i], NULL, race, &r[i]) == 0);
    }
    for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 3; i++) {
        CHECK(r[i].st == TS_OK);
        CHECK_SAME_DOUBLE(r[i].score, r[0].score);
    }
    CHECK(count_entries(dir, "ifelse-") == 1 && count_entries(dir, "") == 1);
    ts_model_free(m);
}

/* A compiler that fails: its stderr ends up in the message. */
static void test_compiler_failure(void) {
    char dir[TSR_PATH_MAX], script[TSR_PATH_MAX + 16];
    fresh_cache(dir, sizeof dir);
    snprintf(script, sizeof script, "%s/badcc", cache_root);
    write_file(script, "#!/bin/sh\necho 'line one' >&2\necho 'badcc: fatal error: out of cheese' >&2\nexit 3\n", 0755);
    setenv("TREESCORE_CC", script, 1);
    tsr_config_reload();
    ts_model *m = make_model(4, 6, 0);
    ts_scorer *s = NULL;
    ts_error err;
    CHECK_STATUS(create(m, TS_ENGINE_IFELSE, 1, &s, &err), TS_ERR_ENGINE_UNAVAILABLE);
    CHECK_MSG(strstr(err.message, "out of cheese") && strstr(err.message, "exit status 3"), "%s", err.message);
    restore_cc();
    CHECK(count_entries(dir, "") == 0); /* the build directory is gone */
    ts_model_free(m);
}

/* A cache directory that cannot be made: compile in TMPDIR, leave nothing there. */
static void test_unwritable_cache(void) {
    char tmp[TSR_PATH_MAX], file[TSR_PATH_MAX + 16], bad[TSR_PATH_MAX + 32];
    CHECK(tsr_make_temp_dir(cache_root, "t", tmp, sizeof tmp) == 0);
    snprintf(file, sizeof file, "%s/afile", cache_root);
    write_file(file, "x", 0644);
    snprintf(bad, sizeof bad, "%s/sub", file); /* a directory under a plain file */
    setenv("TREESCORE_CACHE_DIR", bad, 1);
    tsr_config_reload();
    const char *old_tmp = getenv("TMPDIR");
    char *saved = old_tmp ? strdup(old_tmp) : NULL;
    setenv("TMPDIR", tmp, 1);
    tsr_config_reload();
    ts_model *m = make_model(5, 6, 0);
    CHECK(compare_with_naive(m, 50) == 0);
    CHECK(count_entries(tmp, "") == 0);
    if (saved) setenv("TMPDIR", saved, 1);
    else unsetenv("TMPDIR");
    tsr_config_reload();
    free(saved);
    unlink(file);
    ts_model_free(m);
}

/* Remove cache_root and everything in it (two levels: cache dirs hold only files). */
static void remove_cache_root(void) {
    DIR *d = opendir(cache_root);
    if (!d) return;
    char path[2 * TSR_PATH_MAX];
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(path, sizeof path, "%s/%s", cache_root, e->d_name);
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) tsr_remove_temp_dir(path);
        else unlink(path);
    }
    closedir(d);
    rmdir(cache_root);
}

int main(void) {
    /* Chunks of 5 rows, so that 3 threads really split the batches. */
    setenv("TREESCORE_CHUNK_ROWS", "5", 1);
    unsetenv("TREESCORE_IFELSE_FILE_NODES");
    tsr_config_reload();
    if (getenv("TREESCORE_CC")) user_cc = strdup(getenv("TREESCORE_CC"));
    if (tsr_make_temp_dir(tsr_tmp_dir(), "treescore-test-ifelse-", cache_root, sizeof cache_root) != 0) {
        perror("mkdtemp");
        return 1;
    }
    RUN_TEST(test_hex_literals);
    RUN_TEST(test_plan);
    RUN_TEST(test_no_compiler);
    if (have_compiler) {
        RUN_TEST(test_exact_multi_part);
        RUN_TEST(test_exact_small_models);
        RUN_TEST(test_cache_hit);
        RUN_TEST(test_corrupt_and_foreign_cache);
        RUN_TEST(test_concurrent_prepare);
        RUN_TEST(test_compiler_failure);
        RUN_TEST(test_unwritable_cache);
    }
    remove_cache_root();
    free(user_cc);
    return check_summary("test_ifelse");
}
