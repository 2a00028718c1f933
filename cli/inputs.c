/* inputs.c: opening models, scorers, data and output files for the subcommands, with their messages. */
#define _XOPEN_SOURCE 700 /* realpath (XSI) on top of the build's POSIX 2008 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
/* Rows per chunk: small enough that a chunk (text as doubles: 8 bytes a column) is still
 * in L2 when it is scored after parsing. 2.1 GB SVMlight file: 23.0 s with 256 rows,
 * 26-28 s with 4,096. */
#define TS_CLI_CHUNK_ROWS 256


double cli_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

ts_model *cli_load_model(const cli_opts *o) {
    ts_model *m = NULL;
    ts_error err;
    if (ts_model_load_file(o->model_path, o->model_format, &m, &err) != TS_OK) {
        cli_error("%s", err.message);
        return NULL;
    }
    if (cli_prepare_model(o, m)) {
        ts_model_free(m);
        return NULL;
    }
    return m;
}

ts_scorer *cli_create_scorer(const ts_model *m, const cli_opts *o, ts_engine engine) {
    ts_scorer_options so;
    ts_scorer *s = NULL;
    ts_error err;
    ts_scorer_options_init(&so);
    so.engine = engine;
    so.n_threads = o->threads;
    so.max_isa = o->isa;
    so.tau = o->tau;
    so.delta = o->delta;
    so.lanes = o->lanes;
    so.plan = o->plan;
    so.batch_hint = o->batch_hint == CLI_ALL_BATCHES ? 0 : o->batch_hint ? o->batch_hint : TS_CLI_CHUNK_ROWS;
    so.sample = o->sample;
    so.sample_rows = o->sample_rows;
    so.sample_stride = o->sample_stride;
    so.packed_columns = o->keep != NULL; /* cli_choose_columns: rows of o->keep's columns */
    if (ts_scorer_create(m, &so, &s, &err) != TS_OK) {
        cli_error("%s: engine %s: %s", o->model_path, ts_engine_name(engine), err.message);
        return NULL;
    }
    return s;
}

int cli_ensure_scorer(const cli_opts *o, const ts_model *m, ts_scorer **s, const tsio_chunk *c) {
    if (*s) return 0;
    cli_opts so = *o;
    float *tmp = NULL;
    so.sample = c->x;
    if (c->xd) { /* the planner times float rows: the doubles rounded are close enough */
        size_t n = c->n_rows * c->n_cols;
        if (!(tmp = malloc((n ? n : 1) * sizeof *tmp))) {
            cli_error("out of memory");
            return -1;
        }
        for (size_t i = 0; i < n; i++) tmp[i] = (float)c->xd[i];
        so.sample = tmp;
    }
    so.sample_rows = c->n_rows;
    so.sample_stride = c->n_cols;
    *s = cli_create_scorer(m, &so, so.engine);
    free(tmp);
    return *s ? 0 : -1;
}

/* Whether the first data line of a regular SVMlight file carries a qid: token. */
static int first_line_has_qid(const char *path) {
    char buf[65536];
    FILE *fp = fopen(path, "rb");
    if (!fp) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    for (char *line = buf; line && *line;) {
        char *next = strchr(line, '\n');
        if (next) *next++ = '\0';
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        if (strspn(line, " \t\r") != strlen(line)) return strstr(line, "qid:") != NULL;
        line = next;
    }
    return 0;
}

/* LightGBM names features Column_0, Column_1, ... when the data had no names. n is the
 * data's column count, which may exceed the model's features (their names end there:
 * NULL; strcmp of it crashed on a header of one column more than a Column_i model has). */
static int generic_names(const ts_model *m, uint32_t n) {
    char want[32];
    for (uint32_t j = 0; j < n; j++) {
        const char *have = ts_model_feature_name(m, j);
        if (!have) break;
        snprintf(want, sizeof want, "Column_%u", j);
        if (strcmp(have, want) != 0) return 0;
    }
    return 1;
}

/* 1 when header name `have` names the model's feature `want`: the same text, or for a
 * LightGBM model with each space read as an underscore (LightGBM stores a DataFrame's
 * "my feat" as "my_feat", and pandas writes the CSV header as "my feat"). */
static int same_name(const char *have, const char *want, int lightgbm) {
    for (; *have && *want; have++, want++)
        if (*have != *want && !(lightgbm && *have == ' ' && *want == '_')) return 0;
    return *have == *want;
}

/* A CSV/TSV header must name the model's features in the model's order, when the model
 * names them: a reordered file would otherwise score silently wrong. */
static int check_names(const cli_opts *o, const ts_model *m, const tsio_reader *r) {
    uint32_t n = tsio_reader_n_cols(r);
    if (o->no_name_check || !tsio_reader_column_name(r, 0) || !ts_model_feature_name(m, 0) || generic_names(m, n))
        return 0;
    ts_model_info info;
    int lightgbm = ts_model_get_info(m, &info, NULL) == TS_OK &&
                   (info.format == TS_FORMAT_LIGHTGBM || info.format == TS_FORMAT_LIGHTGBM_JSON);
    for (uint32_t j = 0; j < n; j++) {
        const char *have = tsio_reader_column_name(r, j), *want = ts_model_feature_name(m, j);
        if (want && !same_name(have, want, lightgbm)) {
            cli_error("%s: feature column %u is named '%s' but feature %u of the model %s is '%s': the columns must "
                      "come in the model's order (--no-name-check scores them as they are)",
                      o->data_path, j, have, j, o->model_path, want);
            return -1;
        }
    }
    return 0;
}

/* A CatBoost model's categorical column reads category ids (the loader's numbering of
 * the categories it knows): a CSV/TSV field of such a column holds the category's text,
 * which the reader hands to ts_model_category_id (text_value below; "3" is the category
 * of the integer 3, as in CatBoost; a category the model never saw is NaN: unseen).
 * SVMlight rows hold numbers only, so there such a model is refused rather than scored
 * wrong; raw float32 rows (written by a program) hold the ids themselves. */
int cli_refuse_hashed_categories(const cli_opts *o, const ts_model *m) {
    ts_model_info info;
    tsio_data_format f = tsio_data_format_resolve(o->data_path, o->data_format);
    if (f == TSIO_DATA_RAW || f == TSIO_DATA_CSV || f == TSIO_DATA_TSV) return 0;
    if (ts_model_get_info(m, &info, NULL) != TS_OK) return 0;
    for (uint32_t c = 0; c < info.n_features; c++)
        if (ts_model_is_categorical(m, c)) {
            const char *name = ts_model_feature_name(m, c);
            int svm = f == TSIO_DATA_SVMLIGHT || (f == TSIO_DATA_AUTO && cli_is_regular_file(o->data_path));
            cli_error("%s: column %u%s%s%s is a CatBoost categorical feature, whose values are category names: "
                      "%s %s; give the categories as text in CSV or TSV (--format csv or tsv), or category ids "
                      "(ts_model_category_id) in raw float32 rows",
                      o->model_path, c, name ? " ('" : "", name ? name : "", name ? "')" : "",
                      !o->data_path ? "the data" : strcmp(o->data_path, "-") ? o->data_path : "standard input",
                      svm ? "is read as SVMlight, whose rows hold numbers only"
                          : "would be read as SVMlight (numbers only) or raw: name its format");
            return -1;
        }
    return 0;
}

/* The reader's text_value for a categorical column: the category's id in the model. */
static ts_status category_value(void *ctx, uint32_t column, const char *text, size_t len, double *value,
                                ts_error *err) {
    float id;
    ts_status st = ts_model_category_id((const ts_model *)ctx, column, text, len, &id, err);
    if (st == TS_OK) *value = id;
    return st;
}

/* The model's categorical columns as text columns of the reader (CSV/TSV); *flags is
 * the array to free after opening (NULL: the model has none). */
static int set_text_columns(const ts_model *m, uint32_t n_features, tsio_data_options *d, unsigned char **flags) {
    *flags = NULL;
    for (uint32_t c = 0; c < n_features; c++) {
        if (!ts_model_is_categorical(m, c)) continue;
        if (!*flags && !(*flags = calloc(n_features, 1))) {
            cli_error("out of memory");
            return -1;
        }
        (*flags)[c] = 1;
    }
    if (*flags) {
        d->text_columns = *flags;
        d->n_text_columns = n_features;
        d->text_value = category_value;
        d->text_ctx = (void *)(uintptr_t)m; /* read only: ts_model_category_id takes a const model */
    }
    return 0;
}

/* The model's feature names, for a CSV/TSV reader to recognize a header line of text
 * columns only (NULL: the model does not name every feature; free the array after
 * opening). */
static const char **header_names(const ts_model *m, uint32_t n_features) {
    const char **names = n_features ? malloc(n_features * sizeof *names) : NULL;
    for (uint32_t j = 0; names && j < n_features; j++)
        if (!(names[j] = ts_model_feature_name(m, j))) {
            free(names);
            return NULL;
        }
    return names;
}

/* LightGBM's convention: DATA.query beside DATA gives the query sizes, unless -q names
 * a file or the rows carry qid: themselves (then the rows win). Its path into buf (4096
 * bytes) and 1 when that file is read. */
static int beside_query_file(const cli_opts *o, char *buf) {
    return !o->query_file && cli_is_regular_file(o->data_path) &&
           (size_t)snprintf(buf, 4096, "%s.query", o->data_path) < 4096 && cli_is_regular_file(buf) &&
           !first_line_has_qid(o->data_path);
}

/* QuickRank and RankLib number features from 1, as LETOR files do: feature k reads
 * SVMlight id k. --one-based put id k in column k - 1, the model's feature k - 1: every
 * feature shifted by one and the scores silently wrong. */
static int refuse_one_based(const cli_opts *o, const ts_model_info *info) {
    tsio_data_format f = tsio_data_format_resolve(o->data_path, o->data_format);
    if (!o->one_based || (info->format != TS_FORMAT_QUICKRANK_XML && info->format != TS_FORMAT_RANKLIB) ||
        (f != TSIO_DATA_SVMLIGHT && f != TSIO_DATA_AUTO))
        return 0;
    cli_error("%s: a %s model's feature k reads SVMlight id k (both count from 1, as in LETOR files): --one-based "
              "would read every feature from the id after its own; leave it out",
              o->model_path, info->format == TS_FORMAT_RANKLIB ? "RankLib" : "QuickRank");
    return -1;
}

/* --feature-names lists one name per column of the data: a CSV/TSV or raw file of
 * another width (an id column in front) was scored with every column read as the
 * feature of the name before it, since the mapped model declares no count of its own. */
static int check_names_count(const cli_opts *o, const tsio_reader *r) {
    uint32_t listed = cli_feature_names_count(), n = tsio_reader_n_cols(r);
    tsio_data_format f = tsio_reader_format(r);
    if (!listed || n == 0 || n == listed || f == TSIO_DATA_SVMLIGHT) return 0;
    cli_error("%s: %u feature columns, but --feature-names %s lists %u names (one per column of the data, in "
              "its order)",
              strcmp(o->data_path, "-") ? o->data_path : "<stdin>", n, o->feature_names_path, listed);
    return -1;
}

tsio_reader *cli_open_data(const cli_opts *o, const ts_model *m, int want_queries, int want_doubles) {
    ts_model_info info;
    tsio_data_options d;
    tsio_reader *r = NULL;
    ts_error err;
    char query_path[4096];
    ts_model_get_info(m, &info, NULL);
    if (refuse_one_based(o, &info)) return NULL;
    tsio_data_options_init(&d);
    d.format = o->data_format;
    d.one_based = o->one_based;
    d.csv_header = o->header;
    d.csv_label_column = o->label_column;
    d.absent_value = ts_model_absent_value(m);
    d.query_file = o->query_file;
    d.double_values = want_doubles;
    d.chunk_rows = TS_CLI_CHUNK_ROWS;
    if (want_queries && beside_query_file(o, query_path)) d.query_file = query_path;
    /* SVMlight needs the width up front: the model's columns. Past the model's declared
     * features an id is an error (as LightGBM and XGBoost refuse such data); models that
     * declare no count (QuickRank) simply never read the extra columns. */
    d.n_cols = info.n_features ? info.n_features : 1;
    d.strict_cols = info.n_features_declared > 0;
    if (o->keep) { /* cli_choose_columns: ids keep the model's original columns */
        d.n_cols = o->keep_of;
        d.strict_cols = o->keep_strict;
        d.keep = o->keep;
        d.n_keep = o->n_keep;
    }
    /* AUTO resolved here as the reader would, because the width to ask for depends on it:
     * SVMlight is read into the model's width, the other formats bring their own. */
    tsio_data_format f = tsio_data_format_resolve(o->data_path, d.format);
    if (f == TSIO_DATA_CSV || f == TSIO_DATA_TSV || f == TSIO_DATA_RAW) d.n_cols = 0;
    unsigned char *text_flags = NULL;
    const char **names = NULL;
    if ((f == TSIO_DATA_CSV || f == TSIO_DATA_TSV) && set_text_columns(m, info.n_features, &d, &text_flags))
        return NULL;
    if (text_flags && (names = header_names(m, info.n_features)) != NULL) {
        d.header_names = names;
        d.n_header_names = info.n_features;
    }
    ts_status st = tsio_reader_open(o->data_path, &d, &r, &err);
    free(text_flags); /* the reader copied it */
    free(names);
    if (st != TS_OK) {
        cli_error("%s", err.message);
        return NULL;
    }
    if (check_names(o, m, r) || check_names_count(o, r)) {
        tsio_reader_close(r);
        return NULL;
    }
    return r;
}

int cli_choose_columns(cli_opts *o, const ts_model *m) {
    if (cli_refuse_hashed_categories(o, m)) return -1;
    tsio_data_format f = tsio_data_format_resolve(o->data_path, o->data_format);
    uint32_t *ids = NULL, n = 0;
    ts_model_info info;
    ts_error err;
    if (!(f == TSIO_DATA_SVMLIGHT || (f == TSIO_DATA_AUTO && cli_is_regular_file(o->data_path)))) return 0;
    if (ts_scorer_columns_for(m, &ids, &n, &err) != TS_OK) {
        cli_error("%s", err.message);
        return -1;
    }
    if (!ids) return 0; /* every column: rows of the model's width */
    ts_model_get_info(m, &info, NULL);
    o->keep_of = info.n_features;
    o->keep_strict = info.n_features_declared > 0;
    o->keep = ids;
    o->n_keep = n;
    return 0;
}

int cli_check_width(const cli_opts *o, const ts_model *m, uint32_t n_cols) {
    ts_model_info info;
    if (o->keep) return 0; /* packed rows of the columns read: the reader checked every id */
    ts_model_get_info(m, &info, NULL);
    if (info.n_features_declared && n_cols != info.n_features_declared && n_cols != info.n_features) {
        cli_error("%s: the data has %u feature columns but the model %s was trained on %u", o->data_path, n_cols,
                  o->model_path, info.n_features_declared);
        return -1;
    }
    if (n_cols < info.n_features) {
        cli_error("%s: the data has %u feature columns but the model %s reads %u", o->data_path, n_cols,
                  o->model_path, info.n_features);
        return -1;
    }
    return 0;
}

/* ---- chunks ----------------------------------------------------------------------- */

void cli_chunks_init(cli_chunks *it, const cli_opts *o, const ts_model *m, tsio_reader *r) {
    memset(it, 0, sizeof *it);
    it->o = o;
    it->m = m;
    it->r = r;
}

int cli_chunks_next(cli_chunks *it, tsio_chunk *c) {
    ts_error err;
    if (tsio_reader_next(it->r, c, &err) != TS_OK) {
        cli_error("%s", err.message);
        return -1;
    }
    if (c->n_rows == 0) return 0;
    if (!it->width_checked && cli_check_width(it->o, it->m, c->n_cols)) return -1;
    it->width_checked = 1;
    return 1;
}

int cli_chunks_score(cli_chunks *it, ts_scorer *s, const tsio_chunk *c) {
    ts_error err;
    size_t need = c->n_rows * ts_scorer_n_outputs(s); /* K scores per row */
    if (need > it->cap) {
        free(it->scores);
        it->cap = need;
        if (!(it->scores = malloc(it->cap * sizeof *it->scores))) {
            it->cap = 0;
            cli_error("out of memory");
            return -1;
        }
    }
    ts_status st = c->xd ? ts_scorer_score_f64(s, c->xd, c->n_rows, c->n_cols, c->n_cols, it->scores, &err)
                         : ts_scorer_score(s, c->x, c->n_rows, c->n_cols, c->n_cols, it->scores, &err);
    if (st != TS_OK) {
        cli_error("%s: rows %llu..: %s", it->o->data_path, (unsigned long long)c->first_row + 1, err.message);
        return -1;
    }
    return 0;
}

void cli_chunks_free(cli_chunks *it) {
    free(it->scores);
    it->scores = NULL;
    it->cap = 0;
}

/* ---- output ----------------------------------------------------------------------- */

/* The temporary output file of this process, removed if a signal ends it (Ctrl-C, a
 * closed pipe, a file size limit):
 * an interrupted run leaves no partial file, like a failed one. One at a time. */
static char pending_tmp[4096];
static volatile sig_atomic_t pending_set;

static void remove_pending(int sig) {
    if (pending_set) unlink(pending_tmp); /* async-signal-safe */
    signal(sig, SIG_DFL);
    raise(sig);
}

/* The signals that remove it: a write to a stderr nobody reads (SIGPIPE: still the quiet
 * end main.c wants) and past `ulimit -f` (SIGXFSZ) ended the run with the temporary file
 * left behind too. */
static const int tmp_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGXFSZ};
#define N_TMP_SIGNALS (sizeof tmp_signals / sizeof tmp_signals[0])

static void watch_tmp(const char *tmp) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = remove_pending;
    sigemptyset(&sa.sa_mask);
    snprintf(pending_tmp, sizeof pending_tmp, "%s", tmp);
    pending_set = 1;
    for (size_t i = 0; i < N_TMP_SIGNALS; i++) sigaction(tmp_signals[i], &sa, NULL);
}

static void unwatch_tmp(void) { pending_set = 0; }

static int same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return a && b && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* The path that a write through `path` creates when it is a dangling symbolic link (or a
 * chain of them ending at a path that does not exist): the last link's target, relative
 * targets taken from their link's directory, into buf (4096 bytes). 1 when `path` is such
 * a link, 0 when it is no link, -1 for a loop (40 links) or a path too long. */
static int dangling_target(const char *path, char *buf) {
    char cur[4096], next[4096];
    if ((size_t)snprintf(cur, sizeof cur, "%s", path) >= sizeof cur) return -1;
    for (int hops = 0; hops <= 40; hops++) {
        struct stat st;
        if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode)) {
            if (hops == 0) return 0;
            memcpy(buf, cur, strlen(cur) + 1);
            return 1;
        }
        ssize_t n = readlink(cur, next, sizeof next - 1);
        if (n < 0) return -1;
        next[n] = '\0';
        char *slash = strrchr(cur, '/');
        if (next[0] == '/' || !slash) {
            memcpy(cur, next, (size_t)n + 1);
        } else {
            size_t dir = (size_t)(slash - cur) + 1;
            if (dir + (size_t)n >= sizeof cur) return -1;
            memcpy(cur + dir, next, (size_t)n + 1);
        }
    }
    return -1;
}

/* The mode a new file would get (0666 less the umask), or the existing file's. */
static mode_t output_mode(const char *path) {
    struct stat st;
    if (stat(path, &st) == 0) return st.st_mode & 07777;
    mode_t mask = umask(0); /* the CLI is single-threaded: read and restore */
    umask(mask);
    return 0666 & ~mask;
}

int cli_output_open(cli_output *out, const char *path, const cli_opts *o) {
    memset(out, 0, sizeof *out);
    out->path = path;
    if (!path || strcmp(path, "-") == 0) {
        out->f = stdout;
        out->path = NULL;
        return 0;
    }
    /* -o model.txt (the options' order mixed up) replaced the model with its scores */
    const char *inputs[4] = {o ? o->data_path : NULL, o ? o->model_path : NULL, o ? o->query_file : NULL,
                             o ? o->feature_names_path : NULL};
    static const char *const what[4] = {"input data", "model", "query file", "feature names file"};
    for (int i = 0; i < 4; i++)
        if (same_file(path, inputs[i])) {
            cli_error("%s: the output would overwrite the %s", path, what[i]);
            return -1;
        }
    /* rank reads DATA.query too: -o DATA.query replaced it with the ranking */
    char beside[4096];
    if (o && o->reads_beside_query && beside_query_file(o, beside) && same_file(path, beside)) {
        cli_error("%s: the output would overwrite the query file (the query sizes beside %s)", path, o->data_path);
        return -1;
    }
    /* Write through a symbolic link to its target, as a plain write would (creating the
     * target of a dangling link; renaming over the link would replace the link). */
    if (realpath(path, out->real)) {
        out->path = path = out->real;
    } else {
        int d = dangling_target(path, out->real);
        if (d < 0) {
            cli_error("%s: cannot follow the symbolic link (a loop, or a path too long)", path);
            return -1;
        }
        if (d > 0) out->path = path = out->real;
    }
    struct stat st;
    /* A file the user may not write (mode 0444, another owner's) is not replaced: the
     * rename below needs only the directory's permission, '> file' would fail. */
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, W_OK) != 0) {
        cli_error("%s: cannot open for writing: %s", path, strerror(errno));
        return -1;
    }
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        /* /dev/null, a FIFO, a terminal: nothing to rename into place. */
        out->f = fopen(path, "w");
        out->tmp[0] = '\0';
        if (!out->f) {
            cli_error("%s: cannot open for writing: %s", path, strerror(errno));
            return -1;
        }
        return 0;
    }
    if ((size_t)snprintf(out->tmp, sizeof out->tmp, "%s.tmp.XXXXXX", path) >= sizeof out->tmp) {
        cli_error("%s: output path too long", path);
        return -1;
    }
    /* The signals that remove it are held from before the file exists until its removal
     * is armed: a Ctrl-C between the two left it behind (seen under ASan, whose calls are
     * slower); one that came meanwhile is delivered at the unblock, and removes it. */
    sigset_t held, before;
    sigemptyset(&held);
    for (size_t i = 0; i < N_TMP_SIGNALS; i++) sigaddset(&held, tmp_signals[i]);
    sigprocmask(SIG_BLOCK, &held, &before);
    int fd = mkstemp(out->tmp);
    if (fd >= 0) watch_tmp(out->tmp);
    sigprocmask(SIG_SETMASK, &before, NULL);
    if (fd < 0) {
        cli_error("%s: cannot create the output file: %s", path, strerror(errno));
        return -1;
    }
    fchmod(fd, output_mode(path));
    out->f = fdopen(fd, "w");
    if (!out->f) {
        close(fd);
        unlink(out->tmp);
        unwatch_tmp();
        cli_error("%s: cannot open the output file: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

int cli_output_commit(cli_output *out) {
    if (!out->path) {
        if (fflush(stdout) != 0 || ferror(stdout)) {
            cli_error("writing standard output: %s", strerror(errno));
            return -1;
        }
        return 0;
    }
    int bad = ferror(out->f);
    if (fclose(out->f) != 0) bad = 1;
    out->f = NULL;
    if (bad) {
        cli_error("%s: writing failed: %s", out->path, strerror(errno));
        if (out->tmp[0]) unlink(out->tmp);
        unwatch_tmp();
        return -1;
    }
    if (out->tmp[0] && rename(out->tmp, out->path) != 0) {
        cli_error("%s: cannot rename the finished output into place: %s", out->path, strerror(errno));
        unlink(out->tmp);
        unwatch_tmp();
        return -1;
    }
    unwatch_tmp();
    return 0;
}

void cli_output_abort(cli_output *out) {
    if (!out->path) {
        fflush(stdout);
        return;
    }
    if (out->f) fclose(out->f);
    out->f = NULL;
    if (out->tmp[0]) unlink(out->tmp);
    unwatch_tmp();
}

/* ---- progress --------------------------------------------------------------------- */

void cli_progress_init(cli_progress *p, int quiet) {
    p->enabled = !quiet && isatty(STDERR_FILENO);
    p->start = p->last = cli_now();
}

void cli_progress_update(cli_progress *p, uint64_t rows) {
    if (!p->enabled) return;
    double now = cli_now();
    if (now - p->last < 0.5 || now - p->start < 1.0) return;
    p->last = now;
    fprintf(stderr, "\rtreescore: %llu rows scored (%.0f rows/s)   ", (unsigned long long)rows,
            (double)rows / (now - p->start));
}

void cli_progress_done(cli_progress *p) {
    if (p->enabled && p->last > p->start) fputc('\n', stderr);
}
