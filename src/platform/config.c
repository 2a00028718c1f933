/* config.c: the one place that calls getenv: the environment read once into tsr_config. */
#include "platform/config.h"
#include "platform/notes.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The snapshot: filled by load() under pthread_once, read-only afterwards. Its strings
 * are copies owned by it (the environment may change under a running program). */
static tsr_config snapshot;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* A copy of the variable's value, NULL when unset (or when the copy fails: as if unset). */
static const char *text(const char *name) {
    const char *v = getenv(name);
    if (!v) return NULL;
    size_t n = strlen(v) + 1;
    char *copy = malloc(n);
    if (copy) memcpy(copy, v, n);
    return copy;
}

#ifdef TS_TEST_KNOBS
static long long positive(const char *name) {
    const char *v = getenv(name);
    long long n = v ? atoll(v) : 0;
    return n > 0 ? n : 0;
}
#endif

/* Seconds: a number from 0 to 1e9 (0: no limit), else (unset, empty, not a number, negative) dflt;
 * a value set but not such a number is named once (as TREESCORE_PLAN_MS is: "5m" was
 * silently the default). */
static double seconds(const char *name, double dflt, atomic_int *warned) {
    const char *v = getenv(name);
    char *end = NULL;
    double d = v && *v ? strtod(v, &end) : -1;
    if (d >= 0 && d <= 1e9 && v && *end == '\0') return d;
    if (v && *v)
        tsr_note_once(warned, "treescore: ignoring %s=%s (expected seconds, a number from 0 to 1e9; 0: no limit); the "
                              "default %.0f s applies", name, v, dflt);
    return dflt;
}

/* 1 when v is one of the space-separated words of `words`. */
static int one_of(const char *v, const char *words) {
    size_t n = strlen(v);
    for (const char *p = words; *p;) {
        size_t len = strcspn(p, " ");
        if (len == n && strncmp(p, v, n) == 0) return 1;
        p += len + (p[len] == ' ');
    }
    return 0;
}

static void load(void) {
    tsr_config c;
    memset(&c, 0, sizeof c);
    c.isa = text("TREESCORE_ISA");
    c.l1d = text("TREESCORE_L1D");
    c.l2 = text("TREESCORE_L2");
    c.l3 = text("TREESCORE_L3");
    c.cache_dir = text("TREESCORE_CACHE_DIR");
    c.xdg_cache_home = text("XDG_CACHE_HOME");
    c.home = text("HOME");
    c.tmp_dir = text("TMPDIR");
    c.cc = text("TREESCORE_CC");
    c.path = text("PATH");
    static atomic_int warned_cc = 0, warned_fifo = 0;
    c.cc_timeout_s = seconds("TREESCORE_CC_TIMEOUT", TSR_CC_TIMEOUT_DEFAULT, &warned_cc);
    c.fifo_timeout_s = seconds("TREESCORE_FIFO_TIMEOUT", TSR_FIFO_TIMEOUT_DEFAULT, &warned_fifo);
    const char *plan = getenv("TREESCORE_PLAN");
    c.plan_rule = plan && strcmp(plan, "rule") == 0;
    if (plan && *plan && !c.plan_rule && strcmp(plan, "measure") != 0) {
        /* as TREESCORE_ISA warns: a misspelt mode ("rules") was silently the default */
        static atomic_int warned = 0;
        tsr_note_once(&warned, "treescore: ignoring TREESCORE_PLAN=%s (expected measure or rule)", plan);
    }
    c.wisdom = text("TREESCORE_WISDOM");
    const char *ms = getenv("TREESCORE_PLAN_MS");
    char *ms_end = NULL;
    double ms_v = ms && *ms ? strtod(ms, &ms_end) : 0;
    c.plan_ms = ms && *ms && *ms_end == '\0' && ms_v > 0 && ms_v <= 1e300 ? ms_v : 0;
    if (ms && *ms && c.plan_ms == 0) {
        /* "0", "abc" or "-5" was silently the default budget */
        static atomic_int warned_ms = 0;
        tsr_note_once(&warned_ms, "treescore: ignoring TREESCORE_PLAN_MS=%s (expected milliseconds, a number > 0); "
                                  "the planner's budget stays 500 ms", ms);
    }
    c.ifelse_opt = text("TREESCORE_IFELSE_OPT");
    c.rapid_update = text("TREESCORE_RAPID_UPDATE");
    /* as TREESCORE_PLAN: "-O2" or "GFNI" was silently the default */
    static atomic_int warned_opt = 0, warned_update = 0;
    if (c.ifelse_opt && *c.ifelse_opt && !one_of(c.ifelse_opt, "0 1 2 3 s g"))
        tsr_note_once(&warned_opt, "treescore: ignoring TREESCORE_IFELSE_OPT=%s (expected 0, 1, 2, 3, s or g: "
                                   "the level, without -O)", c.ifelse_opt);
    if (c.rapid_update && *c.rapid_update && !one_of(c.rapid_update, "gfni and"))
        tsr_note_once(&warned_update, "treescore: ignoring TREESCORE_RAPID_UPDATE=%s (expected gfni or and)",
                      c.rapid_update);
#ifdef TS_TEST_KNOBS
    c.chunk_rows = (size_t)positive("TREESCORE_CHUNK_ROWS");
    c.ifelse_file_nodes = (uint64_t)positive("TREESCORE_IFELSE_FILE_NODES");
    c.split_trees = (unsigned)positive("TREESCORE_SPLIT_TREES");
    c.rapid_pad_rows = (unsigned)positive("TREESCORE_RAPID_PAD_ROWS");
    c.rapid_order = (unsigned)positive("TREESCORE_RAPID_ORDER");
    c.plan_trial = (unsigned)positive("TREESCORE_PLAN_TRIAL");
    c.gpu_threads = (unsigned)positive("TREESCORE_GPU_THREADS");
    c.gpu_block_nodes = (unsigned)positive("TREESCORE_GPU_BLOCK_NODES");
    c.gpu_slice_rows = (size_t)positive("TREESCORE_GPU_SLICE_ROWS");
    c.gpu_no_split = (unsigned)positive("TREESCORE_GPU_NO_SPLIT");
    const char *top = getenv("TREESCORE_DEEP_TOP");
    c.deep_top = top && top[0] >= '0' && top[0] <= '8' && top[1] == '\0' ? top[0] - '0' : -1;
#else
    c.deep_top = -1;
#endif
    snapshot = c;
}

const tsr_config *tsr_config_get(void) {
    pthread_once(&once, load);
    return &snapshot;
}

#ifdef TS_TEST_KNOBS
static void release(tsr_config *c) {
    const char *owned[] = {c->isa,  c->l1d,     c->l2,   c->l3,     c->cache_dir, c->xdg_cache_home,
                           c->home, c->tmp_dir, c->cc,   c->path,   c->wisdom,    c->ifelse_opt,
                           c->rapid_update};
    for (size_t i = 0; i < sizeof owned / sizeof owned[0]; i++) free((void *)owned[i]);
}

void tsr_config_reload(void) {
    pthread_once(&once, load);
    release(&snapshot);
    load();
}
#endif
