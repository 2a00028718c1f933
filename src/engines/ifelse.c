/* ifelse.c: the compiled If-Then-Else engine: C code generated per model, compiled by the system compiler into a cached shared object, loaded with dlopen. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

#include "common/error.h"
#include "engines/coder.h"
#include "engines/engine.h"
#include "engines/ifelse_codegen.h"
#include "model/hash.h"
#include "platform/artifacts.h"
#include "platform/cc.h"
#include "platform/clock.h"
#include "platform/config.h"
#include "platform/cpu.h"
#include "platform/notes.h"

/*
 * Preparing a model
 * -----------------
 *   1. key = SHA-256(model's SHA-256, codegen version, treescore version): what decides
 *      the scores of the generated code; ckey = hash(compiler path and identity, flags).
 *   2. The cache directory is opened and checked (artifacts.h: owned by this user, not
 *      writable by group or others). <cache dir>/ifelse-<key>-<ckey>.so is opened
 *      without following links, checked the same way, its size and hash checked
 *      against the integrity record at its end (artifacts.h: a truncated or damaged
 *      object is never loaded; a warning says so and it is compiled again), loaded
 *      through its descriptor, and its tsif_info must match (a cache hit runs no
 *      compiler). Without a compiler,
 *      any ifelse-<key>-*.so that passes will do: every compiler's object scores the
 *      same bits.
 *   3. Else (unless the caller set no_build: then TS_ERR_ENGINE_UNAVAILABLE) plan the
 *      functions and C files (ifelse_codegen.h), make a private directory (inside the
 *      cache dir when it is trusted, else in $TMPDIR), compile the files in parallel
 *      (one job per CPU, each file written just before its compile starts), link them
 *      with the table into a shared object (the objects listed in a response file when
 *      there are many), seal it (integrity record appended, file synced), load it from
 *      there, check it, and rename it into the cache (atomic: readers see the whole
 *      file or none). Each compiler process has a time limit (cc.h). The private directory is removed
 *      on every path. An untrusted cache directory is never read or written: the
 *      object is compiled privately on every prepare, and a warning says so once.
 *
 * The flags never include -ffast-math and set -ffp-contract=off: comparisons and the
 * double additions are then the ones naive does, so the scores are the same bits.
 *
 * Environment (besides TREESCORE_CC and TREESCORE_CACHE_DIR, see treescore.h):
 *   (what a prepare did, cache hit or compile cost, is one TSR_NOTE_INFO note: in the
 *   plan report, and printed by the CLI when TREESCORE_VERBOSE is set)
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
    void *handle;           /* tsr_load_fd's handle: released with tsr_unload */
    const tsif_part_fn *parts;
    uint32_t n_parts;
    double base_score;
    tsc_coder coder;        /* the codes the generated splits read (ifelse_codegen.h) */
    size_t code_stride;     /* bytes of a row's codes: n_slots rounded up to 8 */
    size_t sweep;           /* rows coded and scored at a time (a multiple of the coder's lanes) */
} ifelse_state;

/* Nodes per C file: about 4 files per job so the jobs finish together, between
 * FILE_NODES_MIN (a compiler process costs some 20 ms to start) and FILE_NODES_MAX
 * (bounds each compiler's memory: about 140 MB with gcc -O1). */
#define FILE_NODES_MIN 4096u
#define FILE_NODES_MAX 20000u
static uint64_t file_nodes(const ts_model *m) {
    if (tsr_config_get()->ifelse_file_nodes) return tsr_config_get()->ifelse_file_nodes; /* a test knob */
    uint64_t total = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) total += (uint64_t)m->trees[t].n_nodes + m->trees[t].n_leaves;
    uint64_t per = total / (4 * (uint64_t)ts_cpu_count()) + 1;
    return per < FILE_NODES_MIN ? FILE_NODES_MIN : per > FILE_NODES_MAX ? FILE_NODES_MAX : per;
}

static const char *opt_level(void) {
    const char *v = tsr_config_get()->ifelse_opt;
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
    uint64_t model[2];      /* the first 128 bits of the model key: tsif_info's check */
    char model_hex[65];     /* the SHA-256 model key: what decides the generated source */
    char cc_hex[17];        /* compiler and flags */
} keys;

static void make_keys(const ts_model *m, const tsr_cc *cc, const char *opt, keys *k) {
    unsigned char digest[32];
    tsm_model_sha256(m, (tsr_cpu_features() & TSR_CPU_SHA) != 0, digest);
    tsm_sha256 c;
    tsm_sha256_init(&c);
    uint32_t version = TSIF_CODEGEN_VERSION;
    tsm_sha256_update(&c, digest, sizeof digest);
    tsm_sha256_update(&c, &version, sizeof version);
    tsm_sha256_update(&c, TS_VERSION_STRING, strlen(TS_VERSION_STRING));
    tsm_sha256_final(&c, digest);
    memcpy(k->model, digest, sizeof k->model);
    tsm_hex(digest, sizeof digest, k->model_hex);
    strcpy(k->cc_hex, "0000000000000000");
    if (!cc) return;
    tsm_sha256_init(&c);
    tsm_sha256_update(&c, cc->path, strlen(cc->path) + 1);
    tsm_sha256_update(&c, cc->identity, strlen(cc->identity) + 1);
    const char *flags[N_CFLAGS + 1];
    cflags(opt, flags);
    for (int i = 0; flags[i]; i++) tsm_sha256_update(&c, flags[i], strlen(flags[i]) + 1);
    tsm_sha256_final(&c, digest);
    tsm_hex(digest, 8, k->cc_hex);
}

/* The cached object's file name: "ifelse-<model key>-<compiler key>.so". */
#define OBJECT_NAME_SIZE 128
static void object_name(const keys *k, char out[OBJECT_NAME_SIZE]) {
    snprintf(out, OBJECT_NAME_SIZE, "ifelse-%s-%s.so", k->model_hex, k->cc_hex);
}

/* ---- Loading ------------------------------------------------------------------------- */

/* Check a loaded object's tsif_info against the key and model: NULL when it matches,
 * else why not. */
static const char *check_info(void *h, const keys *k, const ts_model *m) {
    const tsif_info *info = (const tsif_info *)dlsym(h, "tsif_info");
    if (!info) return "it has no tsif_info";
    if ((uintptr_t)info % _Alignof(tsif_info) != 0) return "its tsif_info is misaligned";
    if (info->magic != TSIF_MAGIC || info->version != TSIF_CODEGEN_VERSION) return "other magic or version";
    if (info->key[0] != k->model[0] || info->key[1] != k->model[1]) return "it was made for another model";
    if (info->n_trees != m->n_trees || info->n_parts > m->n_trees || (info->n_parts && !info->parts))
        return "inconsistent table";
    for (uint64_t p = 0; p < info->n_parts; p++)
        if (!info->parts[p]) return "inconsistent table";
    return NULL;
}

/* Why a cached object was not loaded (nothing of it ran in either case). */
enum { OBJ_OK = 0, OBJ_UNTRUSTED = 1, OBJ_DAMAGED = 2 };

/* Load `name` in dirfd (AT_FDCWD for a path): opened without following links, checked
 * (artifacts.h: trust, then size and hash against its integrity record), loaded through
 * that descriptor, its tsif_info checked. 0 and the state filled; -1 with the reason in
 * why (*rejected set to OBJ_UNTRUSTED or OBJ_DAMAGED when a check failed before any of
 * it was loaded). */
static int load_object(int dirfd, const char *name, const char *fallback, const keys *k, const ts_model *m,
                       ifelse_state *s, char *why, size_t size, int *rejected) {
    int fd = tsr_open_trusted(dirfd, name, why, size);
    *rejected = fd == -2 ? OBJ_UNTRUSTED : OBJ_OK;
    if (fd < 0) return -1;
    if (tsr_check_seal(fd, 1, why, size) != 0) {
        close(fd);
        *rejected = OBJ_DAMAGED;
        return -1;
    }
    void *h = tsr_load_fd(fd, fallback, why, size);
    if (!h) return -1;
    const char *bad = check_info(h, k, m);
    if (bad) {
        snprintf(why, size, "%s", bad);
        tsr_unload(h);
        return -1;
    }
    const tsif_info *info = (const tsif_info *)dlsym(h, "tsif_info");
    s->handle = h;
    s->parts = info->parts;
    s->n_parts = (uint32_t)info->n_parts;
    return 0;
}

/* Without a compiler: any cached object of this model (made by another compiler) that
 * passes the checks; its name in name_out. */
static int load_any_cached(const tsr_cache *c, const keys *k, const ts_model *m, ifelse_state *s, char *name_out,
                           size_t size) {
    int fd = openat(c->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        return -1;
    }
    char prefix[80], why[TSR_WHY_SIZE];
    int found = -1, rejected;
    snprintf(prefix, sizeof prefix, "ifelse-%s-", k->model_hex);
    for (struct dirent *e; found != 0 && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0 || len < 3 || strcmp(e->d_name + len - 3, ".so") != 0)
            continue;
        found = load_object(c->fd, e->d_name, NULL, k, m, s, why, sizeof why, &rejected);
        /* The name is for reports only: a truncated one is cut to the directory. */
        if (found == 0 && (size_t)snprintf(name_out, size, "%s/%s", c->path, e->d_name) >= size)
            snprintf(name_out, size, "%s", c->path);
    }
    closedir(d);
    return found;
}

/* ---- Compiling --------------------------------------------------------------------------- */

/* The link step lists the objects in a response file (@FILE, read by gcc and clang)
 * when there are more than this many, so that a huge model never overflows the
 * command line. */
#define RESPONSE_FILE_MIN 8

/* One build: the private directory, its file names and the compile jobs. */
typedef struct build {
    const ts_model *m;
    const keys *k;
    tsif_plan plan;
    char dir[TSR_PATH_MAX]; /* absolute */
    char **paths;           /* per file: source, object, log (3 * n_files), then main.c, the .so,
                               link.log, link.rsp, "@" link.rsp */
    char ***argvs;
    tsr_cc_job *jobs;
    uint64_t c_bytes;
} build;

#define N_EXTRA_PATHS 5

static char *path_in(const char *dir, const char *name) {
    size_t len = strlen(dir) + strlen(name) + 2;
    char *p = malloc(len);
    if (p) snprintf(p, len, "%s/%s", dir, name);
    return p;
}

static void build_free(build *b) {
    size_t n = b->plan.n_files;
    if (b->paths)
        for (size_t i = 0; i < 3 * n + N_EXTRA_PATHS; i++) free(b->paths[i]);
    if (b->argvs)
        for (size_t i = 0; i < n + 1; i++) free(b->argvs[i]);
    free(b->paths);
    free(b->argvs);
    free(b->jobs);
    tsif_plan_free(&b->plan);
}

static int use_response_file(const build *b) { return b->plan.n_files > RESPONSE_FILE_MIN; }

/* argv for `cc FLAGS -c fK.c -o fK.o` (i < n) or `cc FLAGS -shared -o X.so main.c
 * f0.o ...` (i == n; the objects as @link.rsp when there are many). */
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
        if (use_response_file(b)) argv[a++] = b->paths[3 * n + 4];
        else
            for (size_t p = 0; p < n; p++) argv[a++] = b->paths[3 * p + 1];
    }
    argv[a] = NULL;
    return argv;
}

static ts_status build_init(build *b, const tsr_cc *cc, const char *opt, ts_error *err) {
    size_t n = b->plan.n_files;
    b->paths = calloc(3 * n + N_EXTRA_PATHS, sizeof *b->paths);
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
    /* Named by the key: a reused build directory name must not bring back another
     * model's object. */
    char so_name[OBJECT_NAME_SIZE];
    object_name(b->k, so_name);
    b->paths[3 * n + 1] = path_in(b->dir, so_name);
    b->paths[3 * n + 2] = path_in(b->dir, "link.log");
    b->paths[3 * n + 3] = path_in(b->dir, "link.rsp");
    b->paths[3 * n + 4] = path_in(b->dir, "@link.rsp");
    for (size_t i = 0; i < 3 * n + N_EXTRA_PATHS; i++)
        if (!b->paths[i]) return ts_fail(err, TS_ERR_NO_MEMORY, "ifelse: out of memory");
    /* "@" then the absolute path: "DIR/@link.rsp" becomes "@DIR/link.rsp" */
    snprintf(b->paths[3 * n + 4], strlen(b->paths[3 * n + 3]) + 2, "@%s", b->paths[3 * n + 3]);
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

/* One argument of a response file, every blank, quote and backslash escaped with a
 * backslash (the GNU rules gcc and clang share). */
static void write_rsp_arg(FILE *f, const char *arg) {
    for (const char *c = arg; *c; c++) {
        if (strchr(" \t\n\r\f\v'\"\\", *c)) fputc('\\', f);
        fputc(*c, f);
    }
    fputc('\n', f);
}

static ts_status write_response_file(const build *b, ts_error *err) {
    size_t n = b->plan.n_files;
    FILE *f = fopen(b->paths[3 * n + 3], "w");
    if (!f) return ts_fail(err, TS_ERR_IO, "ifelse: cannot write %s: %s", b->paths[3 * n + 3], strerror(errno));
    for (size_t p = 0; p < n; p++) write_rsp_arg(f, b->paths[3 * p + 1]);
    if (fclose(f) != 0) return ts_fail(err, TS_ERR_IO, "ifelse: cannot write %s", b->paths[3 * n + 3]);
    return TS_OK;
}

static ts_status write_main_source(void *ctx, size_t i, ts_error *err) {
    build *b = ctx;
    (void)i;
    if (use_response_file(b)) TS_TRY(write_response_file(b, err));
    return tsif_write_main(b->paths[3 * b->plan.n_files], &b->plan, b->m->n_trees, b->k->model, &b->c_bytes, err);
}

/* Make the private build directory: in the cache dir when it is trusted and no one else
 * can rename it or its ancestors (tsr_path_safe: the compiler is given paths), else in
 * $TMPDIR (made absolute). *in_cache tells which. */
static ts_status make_build_dir(const tsr_cache *c, build *b, int *in_cache, ts_error *err) {
    *in_cache = 0;
    char why[TSR_WHY_SIZE];
    if (c && tsr_path_safe(c->path, why, sizeof why) == 0) {
        tsr_remove_stale_dirs_at(c->fd, ".tmp-ifelse-", 24 * 3600.0);
        if (tsr_make_temp_dir(c->path, ".tmp-ifelse-", b->dir, sizeof b->dir) == 0) {
            *in_cache = 1;
            return TS_OK;
        }
    }
    char tmp[TSR_PATH_MAX];
    if (tsr_absolute(tsr_tmp_dir(), tmp, sizeof tmp) == 0 &&
        tsr_make_temp_dir(tmp, "treescore-ifelse-", b->dir, sizeof b->dir) == 0)
        return TS_OK;
    return ts_fail(err, TS_ERR_IO, "ifelse: cannot make a build directory in %s: %s", tsr_tmp_dir(), strerror(errno));
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

/* The linked object: opened without following links, made 0700, checked, sealed (its
 * integrity record appended and the file synced: artifacts.h), loaded through its
 * descriptor. Only then is it renamed into the cache, so the cache never holds a
 * partly written object under its final name. 0 or -1 with why. */
static int load_built(const char *so, const keys *k, const ts_model *m, ifelse_state *s, uint64_t *bytes,
                      char *why, size_t size) {
    int fd = tsr_open_own(AT_FDCWD, so, 0700, why, size);
    if (fd < 0) return -1;
    struct stat sb;
    *bytes = fstat(fd, &sb) == 0 ? (uint64_t)sb.st_size : 0;
    if (tsr_seal_fd(fd, why, size) != 0) {
        close(fd);
        return -1;
    }
    void *h = tsr_load_fd(fd, so, why, size);
    if (!h) return -1;
    const char *bad = check_info(h, k, m);
    if (bad) {
        snprintf(why, size, "%s", bad);
        tsr_unload(h);
        return -1;
    }
    const tsif_info *info = (const tsif_info *)dlsym(h, "tsif_info");
    s->handle = h;
    s->parts = info->parts;
    s->n_parts = (uint32_t)info->n_parts;
    return 0;
}

/* Generate, compile, link, load; move the object to `final` in the cache when c (a
 * trusted cache) is given. */
static ts_status compile_and_load(const ts_model *m, const keys *k, const tsr_cc *cc, const char *opt,
                                  const tsr_cache *c, const char *final, ifelse_state *s, compile_report *rep,
                                  ts_error *err) {
    build b;
    memset(&b, 0, sizeof b);
    b.m = m;
    b.k = k;
    double t0 = tsr_now();
    int in_cache = 0;
    ts_status st = tsif_plan_make(m, file_nodes(m), &b.plan, err);
    b.plan.q = &s->coder.t.q;
    if (st == TS_OK) st = make_build_dir(c, &b, &in_cache, err);
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
    char why[TSR_WHY_SIZE];
    if (st == TS_OK && load_built(so, k, m, s, &rep->so_bytes, why, sizeof why) != 0)
        st = ts_fail(err, TS_ERR_ENGINE_UNAVAILABLE, "ifelse: the object just compiled by %s does not load: %s",
                     cc->path, why);
    if (st == TS_OK) {
        /* on failure the object stays loaded; the next prepare just misses again */
        if (in_cache) rep->cached = renameat(AT_FDCWD, so, c->fd, final) == 0;
        else if (c) rep->cached = tsr_copy_into(c->fd, final, so, 0700) == 0; /* built in $TMPDIR */
        if (c && !rep->cached) { /* a read-only or full cache: say so, or every run compiles silently */
            static atomic_int warned;
            tsr_note_once(&warned, "treescore: cannot store the compiled object in the cache directory %s: %s; "
                                   "ifelse compiles again on every run", c->path, strerror(errno));
        }
    } else if (err && strncmp(err->message, "ifelse:", 7) != 0) {
        ts_error_prefix(err, "ifelse");
    }
    tsr_remove_dir_at(AT_FDCWD, b.dir);
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
    tsr_unload(s->handle);
    tsc_coder_free(&s->coder);
    free(s);
}

/* Codes per sweep: about 1 MiB. The longer each part's loop runs, the better its code is
 * used (float rows of 1,000 x 64 leaves, 1 thread: 16 KiB sweeps 17.4 us/doc, 64 KiB
 * 13.4, 256 KiB 11.8, 1 MiB 11.2, unlimited 11.0); the scorer's chunks are often shorter
 * anyway. */
#define SWEEP_BYTES (1u << 20)

static void set_layout(const ts_model *m, ifelse_state *s, tse_layout *layout) {
    /* A row visits about depth nodes per tree, about 1 ns each (measured: 1,000 x 64
     * leaves, 11 us a row): about 1,000,000 visits make the ~1 ms a thread pays for. */
    uint64_t visits = 1;
    for (uint32_t t = 0; t < m->n_trees; t++) visits += m->trees[t].depth + 1;
    const uint32_t lanes = s->coder.k.lanes;
    s->code_stride = ((size_t)s->coder.t.q.n_slots + 7) / 8 * 8;
    if (s->code_stride == 0) s->code_stride = 8;
    s->sweep = (SWEEP_BYTES / s->code_stride + lanes - 1) / lanes * lanes;
    const size_t scratch = s->sweep * s->code_stride + tsc_coder_scratch(&s->coder);
    *layout = (tse_layout){s->coder.k.isa, 0, 0, scratch, (size_t)(1000000 / visits + 1), 0};
}

static void say_miss(const ts_model *m, const compile_report *r, const char *opt, const char *where) {
    tsr_note(TSR_NOTE_INFO,
             "ifelse: cache miss, %u trees in %u files (%.1f MB of C), compiled in %.2f s with %u jobs at -O%s, "
             "peak compiler RSS %.0f MB (link %.0f MB), %.1f MB shared object, %s",
             m->n_trees, r->n_files, (double)r->c_bytes / 1e6, r->wall_s, r->jobs, opt, (double)r->peak_rss / 1e6,
             (double)r->link_rss / 1e6, (double)r->so_bytes / 1e6, where);
}

/* Where the object was loaded from, for the cache-miss note. */
static const char *miss_where(const compile_report *r, const tsr_cache *c, const char *final_path) {
    if (r->cached) return final_path;
    if (c->fd >= 0 && !c->trusted) return "not cached (the cache directory is not trusted)";
    return "not cached (the cache directory is not writable)";
}

/* A cache miss: compile (unless no_build), load, and say what it cost. `rejected` is
 * why the cached object (when there was one) was not used. */
static ts_status prepare_miss(const ts_model *m, int no_build, const keys *k, const tsr_cc *cc,
                              const char *opt, const tsr_cache *c, const char *name, const char *final_path,
                              const char *rejected, ifelse_state *s, ts_error *err) {
    if (no_build)
        return ts_fail(err, TS_ERR_ENGINE_UNAVAILABLE,
                       "ifelse: not compiled yet for this model and compiler, and this caller never starts a build "
                       "(the planner: a compile can take minutes; use engine ifelse once to compile and cache it)");
    if (rejected) tsr_note(TSR_NOTE_INFO, "ifelse: the cached %s is rejected: %s", final_path, rejected);
    compile_report rep;
    memset(&rep, 0, sizeof rep);
    TS_TRY(compile_and_load(m, k, cc, opt, c->trusted ? c : NULL, name, s, &rep, err));
    say_miss(m, &rep, opt + 2, miss_where(&rep, c, final_path));
    return TS_OK;
}

/* The lock (".lock-NAME" in the cache) that processes compiling the same object at once
 * take in turn, so that one compiles and the others load its object: a big model's
 * compile takes minutes and GBs. Waits up to 10 compiler time limits (none without
 * one); -1 when there is no lock to take. The holder removes the file when done (one
 * that opened it meanwhile then finds the object; at worst two compile, as before). */
static int lock_build(const tsr_cache *c, const char *name, char lock[OBJECT_NAME_SIZE + 8]) {
    snprintf(lock, OBJECT_NAME_SIZE + 8, ".lock-%s", name);
    double limit = tsr_config_get()->cc_timeout_s;
    int waited;
    return tsr_lock_wait(c->fd, lock, limit > 0 ? 10 * limit : 0, &waited);
}

/* prepare, building on a miss unless no_build. */
static ts_status prepare(const ts_model *m, int no_build, ts_isa isa, void **out, tse_layout *layout,
                         ts_error *err) {
    ifelse_state *s = calloc(1, sizeof *s);
    if (!s) return ts_fail(err, TS_ERR_NO_MEMORY, "ifelse: out of memory");
    s->base_score = m->base_score;
    ts_status cs = tsc_coder_init(&s->coder, m, isa, err);
    if (cs != TS_OK) {
        ifelse_free(s);
        return cs;
    }
    tsr_cache c;
    if (tsr_cache_open(&c, !no_build) != 0)
        tsr_cache_warn_unusable(&c, no_build ? "ifelse is not a candidate"
                                              : "ifelse compiles in a private temporary directory instead, "
                                                "on every run");
    if (!no_build && c.fd < 0 && !c.path[0]) { /* HOME unset (a service, cron) and no TREESCORE_CACHE_DIR */
        static atomic_int warned;
        tsr_note_once(&warned, "treescore: %s; ifelse compiles in a private temporary directory instead, on every "
                               "run", c.why);
    }
    if (c.fd >= 0 && !c.trusted)
        tsr_cache_warn_untrusted(&c, no_build ? "ifelse is not a candidate"
                                                   : "ifelse compiles in a private temporary directory instead, "
                                                     "on every run");
    tsr_cc cc;
    ts_error cc_err;
    int have_cc = tsr_cc_find(&cc, &cc_err) == TS_OK;
    char opt[8], name[OBJECT_NAME_SIZE], final_path[sizeof c.path + OBJECT_NAME_SIZE], why[TSR_WHY_SIZE];
    snprintf(opt, sizeof opt, "-O%s", opt_level());
    keys k;
    make_keys(m, have_cc ? &cc : NULL, opt, &k);
    object_name(&k, name);
    snprintf(final_path, sizeof final_path, "%s/%s", c.path, name);
    ts_status st = TS_OK;
    int rejected = OBJ_OK, tried = have_cc && c.trusted;
    why[0] = '\0';
    if (tried && load_object(c.fd, name, NULL, &k, m, s, why, sizeof why, &rejected) == 0) {
        tsr_note(TSR_NOTE_INFO, "ifelse: cache hit %s", final_path);
    } else if (!have_cc) {
        if (!c.trusted || load_any_cached(&c, &k, m, s, final_path, sizeof final_path) != 0) {
            if (err) *err = cc_err;
            ts_error_prefix(err, "ifelse");
            st = cc_err.status;
        } else {
            tsr_note(TSR_NOTE_INFO, "ifelse: cache hit (no compiler; made by another) %s", final_path);
        }
    } else {
        if (rejected == OBJ_UNTRUSTED)
            tsr_note(TSR_NOTE_WARN, "treescore: not loading %s: %s (it must be owned by this user and not "
                     "writable by group or others); compiling it again", final_path, why);
        if (rejected == OBJ_DAMAGED)
            tsr_note(TSR_NOTE_WARN, "treescore: not loading %s: %s; %s", final_path, why,
                     no_build ? "ifelse is not a candidate" : "compiling it again");
        int existed = tried && rejected == OBJ_OK && why[0] && strncmp(why, "cannot open", 11) != 0;
        char lock_name[OBJECT_NAME_SIZE + 8];
        int lock = tried && !no_build ? lock_build(&c, name, lock_name) : -1, reloaded = 0;
        if (lock >= 0) { /* another process may have compiled it while this one waited */
            int rej2 = OBJ_OK;
            char why2[TSR_WHY_SIZE];
            reloaded = load_object(c.fd, name, NULL, &k, m, s, why2, sizeof why2, &rej2) == 0;
            if (reloaded) tsr_note(TSR_NOTE_INFO, "ifelse: cache hit (compiled by another process meanwhile) %s", final_path);
        }
        if (!reloaded)
            st = prepare_miss(m, no_build, &k, &cc, opt, &c, name, final_path, existed ? why : NULL, s, err);
        if (lock >= 0) {
            unlinkat(c.fd, lock_name, 0);
            close(lock);
        }
    }
    tsr_cache_close(&c);
    if (st != TS_OK) {
        ifelse_free(s);
        return st;
    }
    set_layout(m, s, layout);
    *out = s;
    return TS_OK;
}

static ts_status ifelse_prepare(const ts_model *m, const tse_config *cfg, void **out, tse_layout *layout,
                                ts_error *err) {
    return prepare(m, cfg->no_build, cfg->isa, out, layout, err);
}

/* 1 when the directory has any entry named ifelse-*: a cheap test before the model's
 * SHA-256 (which costs some 4 ms per MB of model). */
static int any_object(const tsr_cache *c) {
    int fd = openat(c->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        return 0;
    }
    int any = 0;
    for (struct dirent *e; !any && (e = readdir(d));) any = strncmp(e->d_name, "ifelse-", 7) == 0;
    closedir(d);
    return any;
}

/* 1 when this model's shared object, built by the compiler and flags ifelse would use
 * now, is in the cache directory and both pass the trust check of artifacts.h (so
 * preparing ifelse is a load, not a compile); else 0. Runs no compiler. */
static int object_cached(const ts_model *m) {
    tsr_cache c;
    tsr_cc cc;
    ts_error e;
    if (tsr_cache_open(&c, 0) != 0) return 0;
    int found = 0;
    if (c.trusted && any_object(&c) && tsr_cc_find(&cc, &e) == TS_OK) {
        char opt[8], name[OBJECT_NAME_SIZE], why[TSR_WHY_SIZE];
        snprintf(opt, sizeof opt, "-O%s", opt_level());
        keys k;
        make_keys(m, &cc, opt, &k);
        object_name(&k, name);
        int fd = tsr_open_trusted(c.fd, name, why, sizeof why);
        found = fd >= 0 && tsr_check_seal(fd, 0, why, sizeof why) == 0; /* the hash is checked when loaded */
        if (fd >= 0) close(fd);
    }
    tsr_cache_close(&c);
    return found;
}

/* A sweep of rows at a time: their codes (coder.h), then every part over them. */
static void ifelse_score(const void *p, const float *x, size_t n_rows, size_t stride, double *out, void *scratch) {
    const ifelse_state *s = p;
    uint8_t *codes = scratch, *group = codes + s->sweep * s->code_stride;
    for (size_t r0 = 0; r0 < n_rows; r0 += s->sweep) {
        size_t n = n_rows - r0 < s->sweep ? n_rows - r0 : s->sweep;
        tsc_code_rows(&s->coder, x + r0 * stride, n, stride, codes, s->code_stride, group);
        for (size_t r = 0; r < n; r++) out[r0 + r] = s->base_score;
        for (uint32_t k = 0; k < s->n_parts; k++) s->parts[k](codes, n, s->code_stride, out + r0);
    }
}

/* The planner never starts a compile: ifelse is a candidate only when its object is
 * already in the cache. */
static int ifelse_plan_candidate(const ts_model *m, const tse_config *cfg) {
    (void)cfg;
    return object_cached(m);
}

const tse_engine tse_engine_ifelse = {
    .id = TS_ENGINE_IFELSE, .name = "ifelse", .prepare = ifelse_prepare, .score = ifelse_score, .free = ifelse_free,
    .plan_candidate = ifelse_plan_candidate,
};
