/* ifelse.c: the compiled If-Then-Else engine: C code generated per model, compiled by the system compiler into a cached shared object, loaded with dlopen. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

#include "common/error.h"
#include "engines/engine.h"
#include "engines/ifelse.h"
#include "engines/ifelse_codegen.h"
#include "model/hash.h"
#include "runtime/cachedir.h"
#include "runtime/cc.h"

/*
 * Preparing a model
 * -----------------
 *   1. key = hash(model fingerprint, codegen version, treescore version): what decides
 *      the scores of the generated code; ckey = hash(compiler path and identity, flags).
 *   2. <cache dir>/ifelse-<key>-<ckey>.so exists and its tsif_info matches: dlopen it
 *      (a cache hit runs no compiler). Without a compiler, any ifelse-<key>-*.so that
 *      loads and matches will do: every compiler's object scores the same bits.
 *   3. Else plan the functions and C files (ifelse_codegen.h), make a private directory
 *      (inside the cache dir, or $TMPDIR when that is not writable), compile the files
 *      in parallel (one job per CPU, each file written just before its compile starts),
 *      link them with the table into a shared object, dlopen it from there, check it,
 *      and rename it into the cache (atomic: readers see the whole file or none). The
 *      private directory is removed on every path.
 *
 * The flags never include -ffast-math and set -ffp-contract=off: comparisons and the
 * double additions are then the ones naive does, so the scores are the same bits.
 *
 * Environment (besides TREESCORE_CC and TREESCORE_CACHE_DIR, see treescore.h):
 *   TREESCORE_VERBOSE          non-empty and not "0": one line on stderr per prepare
 *                              (cache hit, or what the compile cost)
 *   TREESCORE_IFELSE_FILE_NODES  nodes (internal + leaves) per generated C file, for
 *                              tuning and tests (default: see file_nodes)
 *   TREESCORE_IFELSE_OPT       optimization level passed as -O<value> (0, 1, 2, 3, s, g);
 *                              default IFELSE_OPT
 */

/* Measured on 1,000 trees x 64 leaves (2 jobs; us/doc at 1 thread): gcc -O0 4.3 s and
 * 21.2 us, -Og 4.7 s and 15.9, -O1 7.0 s and 13.5, -O2 27.3 s and 13.7; clang -O0 1.7 s
 * and 21.5, -O1 21.1 s and 12.9, -O2 50.1 s and 13.9. -O1 is as fast as -O2 and
 * compiles 4 times sooner. */
#define IFELSE_OPT "1"

typedef struct ifelse_state {
    void *handle;
    const tsif_part_fn *parts;
    uint32_t n_parts;
    double base_score;
} ifelse_state;

static int verbose(void) {
    const char *v = getenv("TREESCORE_VERBOSE");
    return v && *v && strcmp(v, "0") != 0;
}

/* Nodes per C file: about 4 files per job so the jobs finish together, between
 * FILE_NODES_MIN (a compiler process costs some 20 ms to start) and FILE_NODES_MAX
 * (bounds each compiler's memory: about 140 MB with gcc -O1). */
#define FILE_NODES_MIN 4096u
#define FILE_NODES_MAX 20000u
static uint64_t file_nodes(const ts_model *m) {
    const char *v = getenv("TREESCORE_IFELSE_FILE_NODES");
    long long n = v ? atoll(v) : 0;
    if (n > 0) return (uint64_t)n;
    uint64_t total = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) total += (uint64_t)m->trees[t].n_nodes + m->trees[t].n_leaves;
    uint64_t per = total / (4 * (uint64_t)ts_cpu_count()) + 1;
    return per < FILE_NODES_MIN ? FILE_NODES_MIN : per > FILE_NODES_MAX ? FILE_NODES_MAX : per;
}

static const char *opt_level(void) {
    const char *v = getenv("TREESCORE_IFELSE_OPT");
    if (v && (strcmp(v, "0") == 0 || strcmp(v, "1") == 0 || strcmp(v, "2") == 0 || strcmp(v, "3") == 0 ||
              strcmp(v, "s") == 0 || strcmp(v, "g") == 0))
        return v;
    return IFELSE_OPT;
}

/* The compile flags, NULL-terminated (opt is "-O1" etc.). */
#define N_CFLAGS 8
static void cflags(const char *opt, const char *out[N_CFLAGS + 1]) {
    const char *f[N_CFLAGS + 1] = {"-std=c99",           opt, "-fPIC", "-ffp-contract=off", "-fno-fast-math",
                                   "-fvisibility=hidden", "-pipe", "-w", NULL};
    memcpy(out, f, sizeof f);
}

/* ---- Keys ------------------------------------------------------------------------------ */

typedef struct keys {
    tsm_hash model;         /* what decides the generated source */
    char model_hex[33];
    char cc_hex[17];        /* compiler and flags */
} keys;

static void make_keys(const ts_model *m, const tsr_cc *cc, const char *opt, keys *k) {
    tsm_hash mh = tsm_model_hash(m);
    tsm_hash h = tsm_hash_init();
    uint32_t version = TSIF_CODEGEN_VERSION;
    tsm_hash_bytes(&h, mh.h, sizeof mh.h);
    tsm_hash_bytes(&h, &version, sizeof version);
    tsm_hash_bytes(&h, TS_VERSION_STRING, strlen(TS_VERSION_STRING));
    k->model = h;
    tsm_hash_hex(&k->model, k->model_hex);
    strcpy(k->cc_hex, "0000000000000000");
    if (!cc) return;
    tsm_hash c = tsm_hash_init();
    tsm_hash_bytes(&c, cc->path, strlen(cc->path) + 1);
    tsm_hash_bytes(&c, cc->identity, strlen(cc->identity) + 1);
    const char *flags[N_CFLAGS + 1];
    cflags(opt, flags);
    for (int i = 0; flags[i]; i++) tsm_hash_bytes(&c, flags[i], strlen(flags[i]) + 1);
    char hex[33];
    tsm_hash_hex(&c, hex);
    memcpy(k->cc_hex, hex, 16);
    k->cc_hex[16] = '\0';
}

/* The cached object's path in dir: "ifelse-<model key>-<compiler key>.so". 0, or -1
 * when it does not fit. */
static int object_path(const char *dir, const keys *k, char *out, size_t size) {
    int n = snprintf(out, size, "%s/ifelse-%s-%s.so", dir, k->model_hex, k->cc_hex);
    return n > 0 && (size_t)n < size ? 0 : -1;
}

/* ---- Loading ------------------------------------------------------------------------- */

/* dlopen path and check its tsif_info against the key and model. 0 and the state filled
 * on success; -1 (handle closed) when it does not load or does not match, with the
 * reason in why. */
static int load_object(const char *path, const keys *k, const ts_model *m, ifelse_state *s, char *why, size_t size) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, size, "%s", e ? e : "dlopen failed");
        return -1;
    }
    const tsif_info *info = (const tsif_info *)dlsym(h, "tsif_info");
    const char *bad = NULL;
    if (!info) bad = "it has no tsif_info";
    else if (info->magic != TSIF_MAGIC || info->version != TSIF_CODEGEN_VERSION) bad = "other magic or version";
    else if (info->key[0] != k->model.h[0] || info->key[1] != k->model.h[1]) bad = "it was made for another model";
    else if (info->n_trees != m->n_trees || info->n_parts > m->n_trees || (info->n_parts && !info->parts))
        bad = "inconsistent table";
    for (uint64_t p = 0; !bad && p < info->n_parts; p++)
        if (!info->parts[p]) bad = "inconsistent table";
    if (bad) {
        snprintf(why, size, "%s", bad);
        dlclose(h);
        return -1;
    }
    s->handle = h;
    s->parts = info->parts;
    s->n_parts = (uint32_t)info->n_parts;
    return 0;
}

/* Without a compiler: any cached object of this model (made by another compiler). */
static int load_any_cached(const char *dir, const keys *k, const ts_model *m, ifelse_state *s, char *path,
                           size_t size) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    char prefix[64], why[256];
    int found = -1;
    snprintf(prefix, sizeof prefix, "ifelse-%s-", k->model_hex);
    for (struct dirent *e; found != 0 && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0 || len < 3 || strcmp(e->d_name + len - 3, ".so") != 0)
            continue;
        int n = snprintf(path, size, "%s/%s", dir, e->d_name);
        if (n > 0 && (size_t)n < size) found = load_object(path, k, m, s, why, sizeof why);
    }
    closedir(d);
    return found;
}

/* ---- Compiling --------------------------------------------------------------------------- */

/* One build: the private directory, its file names and the compile jobs. */
typedef struct build {
    const ts_model *m;
    const keys *k;
    tsif_plan plan;
    char dir[TSR_PATH_MAX];
    char **paths;           /* per file: source, object, log (3 * n_files), then main.c, the .so, link.log */
    char ***argvs;
    tsr_cc_job *jobs;
    uint64_t c_bytes;
} build;

static char *path_in(const char *dir, const char *name) {
    size_t len = strlen(dir) + strlen(name) + 2;
    char *p = malloc(len);
    if (p) snprintf(p, len, "%s/%s", dir, name);
    return p;
}

static void build_free(build *b) {
    size_t n = b->plan.n_files;
    if (b->paths)
        for (size_t i = 0; i < 3 * n + 3; i++) free(b->paths[i]);
    if (b->argvs)
        for (size_t i = 0; i < n + 1; i++) free(b->argvs[i]);
    free(b->paths);
    free(b->argvs);
    free(b->jobs);
    tsif_plan_free(&b->plan);
}

/* argv for `cc FLAGS -c fK.c -o fK.o` (i < n) or `cc FLAGS -shared -o X.so main.c
 * f0.o ...` (i == n). */
static char **make_argv(const build *b, const tsr_cc *cc, const char *opt, size_t i) {
    size_t n = b->plan.n_files, cap = N_CFLAGS + 8 + (i == n ? n : 0);
    char **argv = calloc(cap, sizeof *argv);
    if (!argv) return NULL;
    const char *flags[N_CFLAGS + 1];
    cflags(opt, flags);
    size_t a = 0;
    argv[a++] = (char *)cc->path;
    for (int f = 0; flags[f]; f++) argv[a++] = (char *)flags[f];
    if (i < n) {
        argv[a++] = "-c";
        argv[a++] = b->paths[3 * i];
        argv[a++] = "-o";
        argv[a++] = b->paths[3 * i + 1];
    } else {
        argv[a++] = "-shared";
        argv[a++] = "-o";
        argv[a++] = b->paths[3 * n + 1];
        argv[a++] = b->paths[3 * n];
        for (size_t p = 0; p < n; p++) argv[a++] = b->paths[3 * p + 1];
    }
    argv[a] = NULL;
    return argv;
}

static ts_status build_init(build *b, const tsr_cc *cc, const char *opt, ts_error *err) {
    size_t n = b->plan.n_files;
    b->paths = calloc(3 * n + 3, sizeof *b->paths);
    b->argvs = calloc(n + 1, sizeof *b->argvs);
    b->jobs = calloc(n + 1, sizeof *b->jobs);
    if (!b->paths || !b->argvs || !b->jobs) return ts_fail(err, TS_ERR_NO_MEMORY, "ifelse: out of memory");
    static const char *const suffix[3] = {"c", "o", "log"};
    for (unsigned p = 0; p < n; p++)
        for (int j = 0; j < 3; j++) {
            char name[32];
            snprintf(name, sizeof name, "f%u.%s", p, suffix[j]);
            b->paths[3 * p + (unsigned)j] = path_in(b->dir, name);
        }
    b->paths[3 * n] = path_in(b->dir, "main.c");
    /* Named by the key: dlopen matches loaded objects by name, and a reused build
     * directory name must not bring back another model's object. */
    char so_path[TSR_PATH_MAX + 128];
    b->paths[3 * n + 1] = object_path(b->dir, b->k, so_path, sizeof so_path) == 0 ? strdup(so_path) : NULL;
    b->paths[3 * n + 2] = path_in(b->dir, "link.log");
    for (size_t i = 0; i < 3 * n + 3; i++)
        if (!b->paths[i]) return ts_fail(err, TS_ERR_NO_MEMORY, "ifelse: out of memory");
    for (size_t i = 0; i <= n; i++) {
        b->argvs[i] = make_argv(b, cc, opt, i);
        if (!b->argvs[i]) return ts_fail(err, TS_ERR_NO_MEMORY, "ifelse: out of memory");
        b->jobs[i] = (tsr_cc_job){b->argvs[i], b->paths[3 * i + 2]};
    }
    return TS_OK;
}

/* tsr_cc_run's hook: write file i just before its compile starts. */
static ts_status write_source(void *ctx, size_t i, ts_error *err) {
    build *b = ctx;
    return tsif_write_file(b->paths[3 * i], b->m, &b->plan, (uint32_t)i, &b->c_bytes, err);
}

static ts_status write_main_source(void *ctx, size_t i, ts_error *err) {
    build *b = ctx;
    (void)i;
    return tsif_write_main(b->paths[3 * b->plan.n_files], &b->plan, b->m->n_trees, b->k->model.h, &b->c_bytes,
                           err);
}

/* Make the private build directory: in the cache dir when possible, else in $TMPDIR.
 * *in_cache tells which. */
static ts_status make_build_dir(const char *cache_dir, build *b, int *in_cache, ts_error *err) {
    *in_cache = 0;
    if (cache_dir) {
        tsr_remove_stale_temp_dirs(cache_dir, ".tmp-ifelse-", 24 * 3600.0);
        if (tsr_make_temp_dir(cache_dir, ".tmp-ifelse-", b->dir, sizeof b->dir) == 0) {
            *in_cache = 1;
            return TS_OK;
        }
    }
    if (tsr_make_temp_dir(tsr_tmp_dir(), "treescore-ifelse-", b->dir, sizeof b->dir) == 0) return TS_OK;
    return ts_fail(err, TS_ERR_IO, "ifelse: cannot make a build directory in %s: %s", tsr_tmp_dir(), strerror(errno));
}

static void sync_file(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

typedef struct compile_report {
    uint32_t n_files;
    uint64_t c_bytes;
    uint64_t so_bytes;
    double wall_s;
    uint64_t peak_rss;      /* the largest compiler process */
    uint64_t link_rss;      /* the link step (the linker's memory grows with the object) */
    unsigned jobs;
    int cached;             /* the object was moved into the cache */
} compile_report;

/* Generate, compile, link, load; move the object to final (when in the cache). */
static ts_status compile_and_load(const ts_model *m, const keys *k, const tsr_cc *cc, const char *opt,
                                  const char *cache_dir, const char *final, ifelse_state *s, compile_report *rep,
                                  ts_error *err) {
    build b;
    memset(&b, 0, sizeof b);
    b.m = m;
    b.k = k;
    double t0 = tsr_now();
    int in_cache = 0;
    ts_status st = tsif_plan_make(m, file_nodes(m), &b.plan, err);
    if (st == TS_OK) st = make_build_dir(cache_dir, &b, &in_cache, err);
    if (st != TS_OK) {
        build_free(&b);
        return st;
    }
    st = build_init(&b, cc, opt, err);
    tsr_cc_stats parts_stats = {0, 0, 0}, link_stats = {0, 0, 0};
    unsigned jobs = ts_cpu_count();
    if (st == TS_OK)
        st = tsr_cc_run(b.jobs, b.plan.n_files, jobs, write_source, &b, &parts_stats, err);
    if (st == TS_OK) st = tsr_cc_run(b.jobs + b.plan.n_files, 1, 1, write_main_source, &b, &link_stats, err);
    const char *so = b.paths ? b.paths[3 * b.plan.n_files + 1] : NULL;
    char why[512];
    if (st == TS_OK && load_object(so, k, m, s, why, sizeof why) != 0)
        st = ts_fail(err, TS_ERR_ENGINE_UNAVAILABLE, "ifelse: the object just compiled by %s does not load: %s",
                     cc->path, why);
    if (st == TS_OK) {
        struct stat sb;
        rep->so_bytes = stat(so, &sb) == 0 ? (uint64_t)sb.st_size : 0;
        if (in_cache) {
            sync_file(so);
            /* on failure the object stays loaded; the next prepare just misses again */
            rep->cached = rename(so, final) == 0;
        }
    } else if (err && strncmp(err->message, "ifelse:", 7) != 0) {
        ts_error_prefix(err, "ifelse");
    }
    tsr_remove_temp_dir(b.dir);
    rep->n_files = b.plan.n_files + 1;
    rep->c_bytes = b.c_bytes;
    rep->wall_s = tsr_now() - t0;
    rep->peak_rss = parts_stats.peak_rss;
    rep->link_rss = link_stats.peak_rss;
    rep->jobs = parts_stats.jobs > link_stats.jobs ? parts_stats.jobs : link_stats.jobs;
    build_free(&b);
    return st;
}

/* ---- Engine --------------------------------------------------------------------------- */

static void ifelse_free(void *p) {
    ifelse_state *s = p;
    if (!s) return;
    if (s->handle) dlclose(s->handle);
    free(s);
}

static void set_layout(const ts_model *m, tse_layout *layout) {
    /* A row visits about depth nodes per tree, about 1 ns each (measured: 1,000 x 64
     * leaves, 11 us a row): about 1,000,000 visits make the ~1 ms a thread pays for. */
    uint64_t visits = 1;
    for (uint32_t t = 0; t < m->n_trees; t++) visits += m->trees[t].depth + 1;
    *layout = (tse_layout){TS_ISA_SCALAR, 0, 0, 0, (size_t)(1000000 / visits + 1), 0};
}

static void say_hit(const char *path, const char *how) {
    if (verbose()) fprintf(stderr, "ifelse: cache hit%s %s\n", how, path);
}

static void say_miss(const ts_model *m, const compile_report *r, const char *opt, const char *final,
                     const char *rejected) {
    if (!verbose()) return;
    const char *where = r->cached ? final : "not cached (the cache directory is not writable)";
    if (rejected) fprintf(stderr, "ifelse: the cached %s is rejected: %s\n", final, rejected);
    fprintf(stderr,
            "ifelse: cache miss, %u trees in %u files (%.1f MB of C), compiled in %.2f s with %u jobs at -O%s, "
            "peak compiler RSS %.0f MB (link %.0f MB), %.1f MB shared object, %s\n",
            m->n_trees, r->n_files, (double)r->c_bytes / 1e6, r->wall_s, r->jobs, opt, (double)r->peak_rss / 1e6,
            (double)r->link_rss / 1e6, (double)r->so_bytes / 1e6, where);
}

static ts_status ifelse_prepare(const ts_model *m, const tse_config *cfg, void **out, tse_layout *layout,
                                ts_error *err) {
    (void)cfg;
    ifelse_state *s = calloc(1, sizeof *s);
    if (!s) return ts_fail(err, TS_ERR_NO_MEMORY, "ifelse: out of memory");
    s->base_score = m->base_score;
    char dir[TSR_PATH_MAX], final[TSR_PATH_MAX + 128], why[512];
    int have_dir = tsr_cache_dir(dir, sizeof dir, 1) == 0;
    tsr_cc cc;
    ts_error cc_err;
    int have_cc = tsr_cc_find(&cc, &cc_err) == TS_OK;
    const char *opt_digit = opt_level();
    char opt[8];
    snprintf(opt, sizeof opt, "-O%s", opt_digit);
    keys k;
    make_keys(m, have_cc ? &cc : NULL, opt, &k);
    if (object_path(have_dir ? dir : ".", &k, final, sizeof final) != 0) have_dir = 0;
    ts_status st = TS_OK;
    why[0] = '\0';
    if (have_cc && have_dir && load_object(final, &k, m, s, why, sizeof why) == 0) {
        say_hit(final, "");
    } else if (!have_cc) {
        if (!have_dir || load_any_cached(dir, &k, m, s, final, sizeof final) != 0) {
            if (err) *err = cc_err;
            ts_error_prefix(err, "ifelse");
            st = cc_err.status;
        } else {
            say_hit(final, " (no compiler; made by another)");
        }
    } else {
        compile_report rep;
        memset(&rep, 0, sizeof rep);
        int existed = have_dir && access(final, F_OK) == 0;
        st = compile_and_load(m, &k, &cc, opt, have_dir ? dir : NULL, final, s, &rep, err);
        if (st == TS_OK) say_miss(m, &rep, opt_digit, final, existed ? why : NULL);
    }
    if (st != TS_OK) {
        ifelse_free(s);
        return st;
    }
    set_layout(m, layout);
    *out = s;
    return TS_OK;
}

int tse_ifelse_cached(const ts_model *m) {
    char dir[TSR_PATH_MAX], final[TSR_PATH_MAX + 128];
    tsr_cc cc;
    ts_error e;
    if (tsr_cache_dir(dir, sizeof dir, 0) != 0 || tsr_cc_find(&cc, &e) != TS_OK) return 0;
    char opt[8];
    snprintf(opt, sizeof opt, "-O%s", opt_level());
    keys k;
    make_keys(m, &cc, opt, &k);
    return object_path(dir, &k, final, sizeof final) == 0 && access(final, R_OK) == 0;
}

/* Rows per sweep over the parts: about half of L2. The longer each part's loop runs,
 * the better its code is used (1,000 x 64 leaves, 1 thread: 16 KiB sweeps 17.4 us/doc,
 * 64 KiB 13.4, 256 KiB 11.8, 1 MiB 11.2, unlimited 11.0); the scorer's chunks are often
 * shorter anyway. */
#define SWEEP_BYTES (1u << 20)

static void ifelse_score(const void *p, const float *x, size_t n_rows, size_t stride, double *out, void *scratch) {
    const ifelse_state *s = p;
    (void)scratch;
    size_t sweep = SWEEP_BYTES / (stride * sizeof(float) + sizeof(double)) + 1;
    if (sweep < 16) sweep = 16;
    for (size_t r0 = 0; r0 < n_rows; r0 += sweep) {
        size_t n = n_rows - r0 < sweep ? n_rows - r0 : sweep;
        for (size_t r = 0; r < n; r++) out[r0 + r] = s->base_score;
        for (uint32_t k = 0; k < s->n_parts; k++) s->parts[k](x + r0 * stride, n, stride, out + r0);
    }
}

const tse_engine tse_engine_ifelse = {TS_ENGINE_IFELSE, "ifelse", ifelse_prepare, ifelse_score, ifelse_free};
