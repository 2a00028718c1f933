/* wisdom.c: the planner's wisdom file: its line format, lookup, append and compaction (never any other file's). */
#include "scorer/wisdom.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform/config.h"
#include "platform/notes.h"

/* 0 when the wisdom file may be used; -1 when it is off or has no place (or its
 * directory is not trusted: then a warning says so once). Close with tsr_cache_close. */
int tsp_wisdom_open(tsp_wisdom_file *w, int create) {
    const char *env = tsr_config_get()->wisdom;
    w->dir.fd = -1;
    if (env && (strcmp(env, "off") == 0 || !*env)) return -1;
    if (env) {
        const char *slash = strrchr(env, '/');
        char dir[4096];
        int n = slash ? snprintf(dir, sizeof dir, "%.*s", (int)(slash - env), env) : snprintf(dir, sizeof dir, ".");
        if (slash == env) snprintf(dir, sizeof dir, "/");
        const char *base = slash ? slash + 1 : env;
        if (n < 0 || (size_t)n >= sizeof dir || !*base || strlen(base) >= sizeof w->name) return -1;
        snprintf(w->name, sizeof w->name, "%s", base);
        if (tsr_dir_open(&w->dir, dir) != 0) {
            tsr_cache_warn_unusable(&w->dir, "the planner's wisdom is neither read nor written");
            return -1;
        }
    } else {
        snprintf(w->name, sizeof w->name, "wisdom");
        if (tsr_cache_open(&w->dir, create) != 0) {
            tsr_cache_warn_unusable(&w->dir, "the planner's wisdom is neither read nor written");
            return -1;
        }
    }
    if (w->dir.trusted) return 0;
    tsr_cache_warn_untrusted(&w->dir, "the planner's wisdom is neither read nor written there");
    tsr_cache_close(&w->dir);
    return -1;
}

/* One line per answer (one per batch-size range planned):
 *   treescore-wisdom-4 MODEL CPU BATCH THREADS ISA TAU DELTA LANES ROWS CANDS ENGINE SPLIT US_PER_DOC
 * (BATCH: the rows per call timed, tsp_range_batch or the caller's batch_hint; ROWS:
 * "data" when the caller gave sample rows, "synthetic" otherwise; CANDS: the
 * candidates' bit set in hex; SPLIT: 1 when one row's trees are split across threads,
 * else 0. Format 3 had no SPLIT: its lines are ignored), optionally followed by
 *   alt=ENGINE
 * the runner-up of a range timed on synthetic rows within TSP_TRIAL_RATIO of ENGINE
 * (scorer/trial.h: the range's first calls decide between the two); readers of format 4
 * before it ignore the field.
 * The last line matching the key wins; lines that do not parse (older formats too), and
 * lines whose ENGINE is not in their CANDS set, are ignored (a line naming ifelse when
 * ifelse was no candidate would start a compile inside ts_scorer_create). */
#define WISDOM_FMT "treescore-wisdom-4 %32s %32s %u %u %15s %u %u %u %15s %x %31s %u %lf"
/* A wisdom file is one whose first line starts with WISDOM_MAGIC (any format's), or an
 * empty one. Any other file (TREESCORE_WISDOM set to a path of other data) is neither
 * read nor written, never truncated or compacted: a warning says so once. */
#define WISDOM_MAGIC "treescore-wisdom-"
/* Larger files are not read (a warning says so) and the next answer replaces them; past
 * WISDOM_COMPACT_BYTES an append compacts the file (one line per key, the newest). */
#define WISDOM_MAX_BYTES (16u << 20)
#define WISDOM_COMPACT_BYTES (64u << 10)

typedef struct wisdom_line {
    char model[33], cpu[33], isa[16], rows[16], name[32], alt_name[40];
    unsigned batch, threads, tau, delta, lanes, cands, split;
    double us;
    ts_engine engine, alt;  /* alt: TS_ENGINE_AUTO when the line names none */
} wisdom_line;

/* Parse one line (up to its '\n'); 1 when it is a valid answer (an alt= field that does
 * not name another engine of the candidate set is ignored, not the line). */
static int wisdom_parse(const char *line, wisdom_line *w) {
    w->alt_name[0] = '\0';
    int got = sscanf(line, WISDOM_FMT " %39s", w->model, w->cpu, &w->batch, &w->threads, w->isa, &w->tau, &w->delta,
                     &w->lanes, w->rows, &w->cands, w->name, &w->split, &w->us, w->alt_name);
    if (got < 13 || w->split > 1) return 0;
    if (!(ts_engine_from_name(w->name, &w->engine) == TS_OK && w->engine != TS_ENGINE_AUTO &&
          (unsigned)w->engine < 32 && (w->cands >> w->engine & 1u)))
        return 0;
    w->alt = TS_ENGINE_AUTO;
    ts_engine a;
    if (got == 14 && !strncmp(w->alt_name, "alt=", 4) && ts_engine_from_name(w->alt_name + 4, &a) == TS_OK &&
        a != TS_ENGINE_AUTO && a != w->engine && (unsigned)a < 32 && (w->cands >> a & 1u))
        w->alt = a;
    return 1;
}

static int wisdom_matches(const wisdom_line *w, const tsp_wisdom_key *k) {
    return !strcmp(w->model, k->model) && !strcmp(w->cpu, k->cpu) && w->batch == k->batch &&
           w->threads == k->threads && !strcmp(w->isa, ts_isa_name(k->isa)) && w->tau == k->tau &&
           w->delta == k->delta && w->lanes == k->lanes && !strcmp(w->rows, k->rows) && w->cands == k->cands &&
           (k->cands >> w->engine & 1u);
}

/* Calls fn on every line of text (NUL-terminated, lines end in '\n' or the end). */
static void each_line(char *buf, void (*fn)(const char *line, size_t len, void *ctx), void *ctx) {
    for (char *p = buf; *p;) {
        char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);
        char save = p[len];
        p[len] = '\0';
        fn(p, len, ctx);
        p[len] = save;
        p += len;
    }
}

typedef struct lookup_ctx {
    const tsp_wisdom_key *k;
    ts_engine engine, alt;
    double us;
    int found, split;
} lookup_ctx;

static void lookup_line(const char *line, size_t len, void *p) {
    lookup_ctx *c = p;
    wisdom_line w;
    (void)len;
    if (wisdom_parse(line, &w) && wisdom_matches(&w, c->k)) {
        c->engine = w.engine;
        c->alt = w.alt;
        c->us = w.us;
        c->split = (int)w.split;
        c->found = 1;
    }
}

/* 1 when buf (len bytes) is the text of a wisdom file (see WISDOM_MAGIC). */
static int is_wisdom_text(const char *buf, size_t len) {
    return len == 0 || (len >= sizeof WISDOM_MAGIC - 1 && memcmp(buf, WISDOM_MAGIC, sizeof WISDOM_MAGIC - 1) == 0);
}

static void warn_not_wisdom(const tsp_wisdom_file *f, const char *why) {
    static atomic_int warned;
    tsr_note_once(&warned,
                  "treescore: not using %s/%s as the planner's wisdom file: %s (a wisdom file starts with '"
                  WISDOM_MAGIC "'; check TREESCORE_WISDOM); it is left as it is",
                  f->dir.path, f->name, why);
}

/* A file that fails the trust checks (tsr_read_trusted's why) or cannot be written
 * (tsr_open_append's), said once per process. */
static void warn_refused(const tsp_wisdom_file *f, const char *why) {
    static atomic_int warned;
    tsr_note_once(&warned,
                  "treescore: not using %s/%s as the planner's wisdom file: %s; the planner times the engines "
                  "again on every run", f->dir.path, f->name, why);
}

/* The file's text when it is a wisdom file (malloc'd, NUL-terminated); else NULL. */
static char *wisdom_read(const tsp_wisdom_file *f, size_t *len) {
    char why[TSR_WHY_SIZE];
    char *buf = tsr_read_trusted(f->dir.fd, f->name, WISDOM_MAX_BYTES, len, why, sizeof why);
    if (!buf && why[0]) warn_refused(f, why); /* a link, a directory, too large: not silently */
    if (buf && !is_wisdom_text(buf, *len)) {
        warn_not_wisdom(f, "it holds other data");
        free(buf);
        buf = NULL;
    }
    return buf;
}

int tsp_wisdom_lookup(const tsp_wisdom_key *k, const tsp_wisdom_file *f, ts_engine *engine, ts_engine *alt,
                      double *us, int *split) {
    size_t len;
    char *buf = wisdom_read(f, &len);
    if (!buf) return 0;
    lookup_ctx c = {k, TS_ENGINE_AUTO, TS_ENGINE_AUTO, 0, 0, 0};
    each_line(buf, lookup_line, &c);
    free(buf);
    if (c.found) {
        *engine = c.engine;
        *alt = c.alt;
        *us = c.us;
        *split = c.split;
    }
    return c.found;
}

/* ---- compaction: the newest valid line per key ---------------------------------------- */

typedef struct compact_ctx {
    const char **lines;     /* valid lines, in file order */
    size_t *lens;
    size_t n, cap;
} compact_ctx;

static void collect_line(const char *line, size_t len, void *p) {
    compact_ctx *c = p;
    wisdom_line w;
    if (!wisdom_parse(line, &w) || line[len - 1] != '\n') return;
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 256;
        const char **l = realloc(c->lines, cap * sizeof *l);
        size_t *n = l ? realloc(c->lens, cap * sizeof *n) : NULL;
        if (l) c->lines = l;
        if (!n) return;
        c->lens = n;
        c->cap = cap;
    }
    c->lines[c->n] = line;
    c->lens[c->n++] = len;
}

/* The length of a line's key: everything before its ENGINE field (the 12th). */
static size_t key_len(const char *line) {
    size_t fields = 0, i = 0;
    for (; line[i] && line[i] != '\n' && fields < 11; i++) /* within the line (fields may be tab-separated) */
        if (line[i] == ' ') fields++;
    return i;
}

static const char **sort_lines;
static int cmp_line_key(const void *a, const void *b) {
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    size_t li = key_len(sort_lines[i]), lj = key_len(sort_lines[j]);
    int c = memcmp(sort_lines[i], sort_lines[j], li < lj ? li : lj);
    if (!c) c = (li > lj) - (li < lj);
    return c ? c : (i > j) - (i < j);
}

static int cmp_size(const void *a, const void *b) {
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    return (i > j) - (i < j);
}

size_t tsp_wisdom_compact_text(char *buf, char *out) {
    /* lines point into buf, whose '\n's each_line restores after each call */
    compact_ctx c = {NULL, NULL, 0, 0};
    each_line(buf, collect_line, &c);
    size_t *idx = malloc((c.n + 1) * sizeof *idx), kept = 0, used = (size_t)-1;
    if (idx) {
        for (size_t i = 0; i < c.n; i++) idx[i] = i;
        sort_lines = c.lines;
        qsort(idx, c.n, sizeof *idx, cmp_line_key);
        for (size_t i = 0; i < c.n; i++) /* the last of each run of equal keys is the newest */
            if (i + 1 == c.n || key_len(c.lines[idx[i]]) != key_len(c.lines[idx[i + 1]]) ||
                memcmp(c.lines[idx[i]], c.lines[idx[i + 1]], key_len(c.lines[idx[i]])) != 0)
                idx[kept++] = idx[i];
        qsort(idx, kept, sizeof *idx, cmp_size);
        used = 0;
        for (size_t i = 0; i < kept; i++) {
            memcpy(out + used, c.lines[idx[i]], c.lens[idx[i]]);
            used += c.lens[idx[i]];
        }
    }
    free(idx);
    free(c.lines);
    free(c.lens);
    return used;
}

int tsp_wisdom_line_valid(const char *line) {
    wisdom_line w;
    return wisdom_parse(line, &w);
}

/* Rewrite the file with the newest valid line per key, in file order (atomically:
 * tsr_replace_file). Planning processes appending meanwhile may lose their line: the
 * file is an optimization. Not thread-safe (sort_lines): called under compact_lock. */
static void wisdom_compact_locked(const tsp_wisdom_file *f) {
    size_t len;
    char *buf = wisdom_read(f, &len); /* only a wisdom file is ever replaced */
    if (!buf) return;
    char *out = malloc(len + 1);
    size_t used = out ? tsp_wisdom_compact_text(buf, out) : (size_t)-1;
    if (used != (size_t)-1) tsr_replace_file(f->dir.fd, f->name, out, used);
    free(out);
    free(buf);
}

static pthread_mutex_t compact_lock = PTHREAD_MUTEX_INITIALIZER;

static void wisdom_compact(const tsp_wisdom_file *f) {
    pthread_mutex_lock(&compact_lock);
    wisdom_compact_locked(f);
    pthread_mutex_unlock(&compact_lock);
}

/* Appends one line with one write() on an O_APPEND descriptor (opened without following
 * links, created 0600, checked), so that processes planning at the same time never
 * interleave parts of lines; past WISDOM_COMPACT_BYTES the file is compacted. Failure
 * is silent: the wisdom file is an optimization. */
int tsp_wisdom_store(const tsp_wisdom_key *k, const tsp_wisdom_file *f, ts_engine e, ts_engine alt, int split,
                     double us) {
    char line[513], why[TSR_WHY_SIZE]; /* one byte spare: a leading '\n' */
    char alt_field[48] = "";
    if (alt != TS_ENGINE_AUTO) snprintf(alt_field, sizeof alt_field, " alt=%s", ts_engine_name(alt));
    int n = snprintf(line, sizeof line - 1, "treescore-wisdom-4 %s %s %u %u %s %u %u %u %s %x %s %d %.6g%s\n", k->model,
                     k->cpu, k->batch, k->threads, ts_isa_name(k->isa), k->tau, k->delta, k->lanes, k->rows, k->cands,
                     ts_engine_name(e), split ? 1 : 0, us, alt_field);
    if (n <= 0 || (size_t)n >= sizeof line - 1) return -1;
    int fd = tsr_open_append(f->dir.fd, f->name, WISDOM_MAGIC, why, sizeof why);
    if (fd == -2) warn_not_wisdom(f, why);
    if (fd == -1) warn_refused(f, why); /* read-only, another user's, a link: not silently */
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0) st.st_size = 0;
    if ((uint64_t)st.st_size > WISDOM_MAX_BYTES) {
        /* never read again (nor compacted, which reads it): appending would grow it for
         * ever while every run plans again; a wisdom file (checked) starts afresh */
        close(fd);
        return tsr_replace_file(f->dir.fd, f->name, line, (size_t)n);
    }
    char last = '\n';
    if (st.st_size > 0 && pread(fd, &last, 1, st.st_size - 1) == 1 && last != '\n') {
        /* a cut last line (a full disk, a killed writer): this answer starts a line of its
         * own instead of being swallowed by it */
        memmove(line + 1, line, (size_t)n + 1);
        line[0] = '\n';
        n++;
    }
    ssize_t w = write(fd, line, (size_t)n);
    int big = fstat(fd, &st) == 0 && (uint64_t)st.st_size > WISDOM_COMPACT_BYTES;
    close(fd);
    if (big) wisdom_compact(f);
    return w == n ? 0 : -1;
}
