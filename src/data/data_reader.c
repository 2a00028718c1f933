/* data_reader.c: the tsio_reader API above the formats: options, format resolution, chunks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/error.h"
#include "data/data_core.h"
#include "data/data_csv.h"
#include "data/data_raw.h"
#include "data/data_svmlight.h"

/* The chunk matrix is kept under this many bytes by lowering chunk_rows (at least 1 row). */
#define TSIO_MAX_CHUNK_BYTES ((size_t)64 << 20)
#define TSIO_MAX_CHUNK_ROWS ((size_t)1 << 20)

/* ==== Options and names =============================================================== */

void tsio_data_options_init(tsio_data_options *o) {
    memset(o, 0, sizeof *o);
    o->format = TSIO_DATA_AUTO;
    o->absent_value = 0.0f;
    o->query_file = NULL;
    o->csv_header = -1;
    o->csv_label_column = -1;
    o->chunk_rows = TSIO_DEFAULT_CHUNK_ROWS;
    o->max_line_bytes = TSIO_DEFAULT_MAX_LINE;
}

const char *tsio_data_format_name(tsio_data_format f) {
    switch (f) {
    case TSIO_DATA_AUTO: return "auto";
    case TSIO_DATA_SVMLIGHT: return "svmlight";
    case TSIO_DATA_CSV: return "csv";
    case TSIO_DATA_TSV: return "tsv";
    case TSIO_DATA_RAW: return "raw";
    case TSIO_DATA_COUNT: break;
    }
    return "unknown";
}

ts_status tsio_data_format_from_name(const char *name, tsio_data_format *out) {
    static const struct {
        const char *name;
        tsio_data_format f;
    } names[] = {{"auto", TSIO_DATA_AUTO}, {"svmlight", TSIO_DATA_SVMLIGHT}, {"letor", TSIO_DATA_SVMLIGHT},
                 {"libsvm", TSIO_DATA_SVMLIGHT}, {"csv", TSIO_DATA_CSV}, {"tsv", TSIO_DATA_TSV},
                 {"raw", TSIO_DATA_RAW}, {"f32", TSIO_DATA_RAW}};
    size_t i;
    if (!name || !out) return TS_ERR_INVALID_ARGUMENT;
    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (tsio_same_ci(name, strlen(name), names[i].name)) {
            *out = names[i].f;
            return TS_OK;
        }
    }
    return TS_ERR_INVALID_ARGUMENT;
}

/* The format named by the path's extension, or AUTO. */
static tsio_data_format format_from_extension(const char *path) {
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    size_t n;
    if (!dot || dot == base) return TSIO_DATA_AUTO;
    dot++;
    n = strlen(dot);
    if (tsio_same_ci(dot, n, "csv")) return TSIO_DATA_CSV;
    if (tsio_same_ci(dot, n, "tsv")) return TSIO_DATA_TSV;
    if (tsio_same_ci(dot, n, "f32") || tsio_same_ci(dot, n, "raw")) return TSIO_DATA_RAW;
    return TSIO_DATA_AUTO;
}

tsio_data_format tsio_data_format_resolve(const char *path, tsio_data_format f) {
    if (f != TSIO_DATA_AUTO || !path || strcmp(path, "-") == 0) return f;
    f = format_from_extension(path);
    if (f != TSIO_DATA_AUTO) return f;
    struct stat st;
    char magic[sizeof TSIO_RAW_MAGIC - 1];
    FILE *fp = stat(path, &st) == 0 && S_ISREG(st.st_mode) ? fopen(path, "rb") : NULL;
    if (!fp) return TSIO_DATA_AUTO;
    size_t got = fread(magic, 1, sizeof magic, fp);
    fclose(fp);
    return got == sizeof magic && memcmp(magic, TSIO_RAW_MAGIC, sizeof magic) == 0 ? TSIO_DATA_RAW : TSIO_DATA_AUTO;
}

static char *copy_string(const char *s) {
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    if (c) memcpy(c, s, n);
    return c;
}

/* ==== Opening and closing ============================================================= */

static ts_status check_options(const tsio_data_options *o, ts_error *err) {
    if ((int)o->format < TSIO_DATA_AUTO || (int)o->format >= TSIO_DATA_COUNT)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "unknown data format %d", (int)o->format);
    if (o->csv_header < -1 || o->csv_header > 1)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "csv_header must be -1, 0 or 1, not %d", o->csv_header);
    if (o->csv_label_column < -1)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "csv_label_column must be >= -1, not %d", o->csv_label_column);
    return TS_OK;
}

/* Binary files given as text data by mistake, by their first bytes: what they are and
 * what to do (NULL: none of them). */
static const char *binary_file_kind(const char *p, size_t n) {
    static const struct { const char *magic; size_t n; const char *what; } kinds[] = {
        {"\x1F\x8B", 2, "gzip-compressed data: decompress it first (zcat FILE | treescore ... -d -)"},
        {"\x93NUMPY", 6, "a NumPy .npy file, which treescore does not read: write the rows as CSV (numpy.savetxt) "
                        "or in treescore's raw float32 format (--format raw, README)"},
        {"PAR1", 4, "a Parquet file, which treescore does not read: write the rows as CSV or in treescore's raw "
                    "float32 format (--format raw, README)"},
        {"PK\x03\x04", 4, "a zip archive: extract the data file from it first (unzip)"},
        {"\xFF\xFE", 2, "UTF-16 text (as Windows Notepad saves 'Unicode'): save it as UTF-8"},
        {"\xFE\xFF", 2, "UTF-16 text: save it as UTF-8"},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (n >= kinds[i].n && memcmp(p, kinds[i].magic, kinds[i].n) == 0) return kinds[i].what;
    return NULL;
}

/* Resolve AUTO from the extension, then from the first bytes ("TSRAWF32" -> raw). */
static ts_status resolve_format(tsio_reader *r, const char *path, ts_error *err) {
    tsio_src *s = &r->src;
    r->format = r->opts.format;
    if (r->format == TSIO_DATA_AUTO && strcmp(path, "-") != 0) r->format = format_from_extension(path);
    if (r->format == TSIO_DATA_AUTO) {
        size_t m = sizeof TSIO_RAW_MAGIC - 1;
        TS_TRY(tsio_src_fill(s, m, err));
        r->format = s->end - s->start >= m && memcmp(s->buf + s->start, TSIO_RAW_MAGIC, m) == 0 ? TSIO_DATA_RAW
                                                                                            : TSIO_DATA_SVMLIGHT;
    }
    if (r->format != TSIO_DATA_RAW) { /* a UTF-8 byte-order mark is not data */
        TS_TRY(tsio_src_fill(s, 6, err));
        const char *what = binary_file_kind(s->buf + s->start, s->end - s->start);
        if (what) return ts_fail(err, TS_ERR_PARSE, "%s: %s", r->name, what);
        if (s->end - s->start >= 3 && memcmp(s->buf + s->start, "\xEF\xBB\xBF", 3) == 0) tsio_src_skip(s, 3);
    }
    return TS_OK;
}

static ts_status alloc_chunk(tsio_reader *r, ts_error *err) {
    size_t cols = r->n_cols ? r->n_cols : 1;
    size_t rows = r->opts.chunk_rows;
    size_t cap = TSIO_MAX_CHUNK_BYTES / (cols * sizeof(float));
    if (rows > TSIO_MAX_CHUNK_ROWS) rows = TSIO_MAX_CHUNK_ROWS;
    if (rows > cap) rows = cap ? cap : 1;
    r->chunk_rows = rows;
    if (r->opts.double_values && r->format != TSIO_DATA_RAW)
        r->xd = malloc(rows * cols * sizeof(double));
    else
        r->x = malloc(rows * cols * sizeof(float));
    r->labels = malloc(rows * sizeof(double));
    r->qids = malloc(rows * sizeof(int64_t));
    r->comments = malloc(rows * sizeof(const char *));
    r->comment_off = malloc(rows * sizeof(size_t));
    if ((!r->x && !r->xd) || !r->labels || !r->qids || !r->comments || !r->comment_off)
        return ts_fail(err, TS_ERR_NO_MEMORY, "%s: out of memory for a %zu x %zu chunk", r->name, rows, cols);
    return TS_OK;
}

/* The hooks of a resolved format. */
static const tsio_format_ops *format_ops(tsio_data_format f) {
    switch (f) {
    case TSIO_DATA_SVMLIGHT: return &tsio_svmlight_ops;
    case TSIO_DATA_CSV:
    case TSIO_DATA_TSV: return &tsio_csv_ops;
    case TSIO_DATA_RAW: return &tsio_raw_ops;
    default: return NULL;
    }
}

static ts_status open_reader(tsio_reader *r, const char *path, ts_error *err) {
    TS_TRY(check_options(&r->opts, err));
    r->name = copy_string(strcmp(path, "-") == 0 ? "<stdin>" : path);
    if (!r->name) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory");
    TS_TRY(tsio_src_open(&r->src, path, r->name, r->opts.max_line_bytes, err));
    TS_TRY(resolve_format(r, path, err));
    r->ops = format_ops(r->format);
    if (!r->ops) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "unknown data format");
    TS_TRY(r->ops->init(r, err));
    TS_TRY(alloc_chunk(r, err));
    return tsio_query_open(r, err);
}

ts_status tsio_reader_open(const char *path, const tsio_data_options *opts, tsio_reader **out, ts_error *err) {
    tsio_reader *r;
    ts_status st;
    if (!out) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "tsio_reader_open: out is NULL");
    *out = NULL;
    if (!path) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "tsio_reader_open: path is NULL");
    r = calloc(1, sizeof *r);
    if (!r) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory");
    r->src.fd = r->qsrc.fd = -1;
    if (opts) r->opts = *opts;
    else tsio_data_options_init(&r->opts);
    if (r->opts.chunk_rows == 0) r->opts.chunk_rows = TSIO_DEFAULT_CHUNK_ROWS;
    if (r->opts.max_line_bytes == 0) r->opts.max_line_bytes = TSIO_DEFAULT_MAX_LINE;
    st = open_reader(r, path, err);
    if (st != TS_OK) {
        tsio_reader_close(r);
        return st;
    }
    *out = r;
    return TS_OK;
}

void tsio_reader_close(tsio_reader *r) {
    if (!r) return;
    if (r->ops) r->ops->close(r);
    tsio_src_close(&r->src);
    tsio_src_close(&r->qsrc);
    free(r->name);
    free(r->query_name);
    free(r->x);
    free(r->xd);
    free(r->labels);
    free(r->qids);
    free(r->comments);
    free(r->comment_off);
    free(r->arena);
    if (r->col_names)
        for (uint32_t j = 0; j < r->n_cols; j++) free(r->col_names[j]);
    free(r->col_names);
    free(r);
}

uint32_t tsio_reader_n_cols(const tsio_reader *r) { return r ? r->n_cols : 0; }

tsio_data_format tsio_reader_format(const tsio_reader *r) { return r ? r->format : TSIO_DATA_AUTO; }

const char *tsio_reader_column_name(const tsio_reader *r, uint32_t j) {
    return r && r->col_names && j < r->n_cols ? r->col_names[j] : NULL;
}

/* ---- Chunks -------------------------------------------------------------------------- */

static ts_status fill_chunk(tsio_reader *r, size_t *rows, ts_error *err) {
    size_t i;
    r->arena_len = 0;
    r->chunk_first_line = 0;
    for (i = 0; i < r->chunk_rows; i++) r->comment_off[i] = SIZE_MAX;
    return r->ops->fill(r, rows, err);
}

static void publish_chunk(tsio_reader *r, size_t rows, tsio_chunk *chunk) {
    size_t i;
    for (i = 0; i < rows; i++) r->comments[i] = r->comment_off[i] == SIZE_MAX ? NULL : r->arena + r->comment_off[i];
    chunk->n_rows = rows;
    chunk->x = r->x;
    chunk->xd = r->xd;
    chunk->labels = r->labels;
    chunk->qids = r->qids;
    chunk->comments = r->comments;
    chunk->first_line = r->chunk_first_line;
    chunk->first_row = r->rows_total;
    r->rows_total += rows;
}

ts_status tsio_reader_next(tsio_reader *r, tsio_chunk *chunk, ts_error *err) {
    ts_error local;
    ts_error *e = err ? err : &local;
    ts_status st = TS_OK;
    size_t rows = 0;
    if (!r || !chunk) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "tsio_reader_next: NULL argument");
    memset(chunk, 0, sizeof *chunk);
    chunk->n_cols = r->n_cols;
    chunk->first_row = r->rows_total;
    if (r->failed != TS_OK) {
        if (err) *err = r->saved;
        return r->failed;
    }
    if (r->done) return TS_OK;
    if (!r->at_eof) st = fill_chunk(r, &rows, e);
    if (st == TS_OK && rows == 0 && r->at_eof) {
        st = tsio_query_check_end(r, e);
        r->done = 1;
    }
    if (st != TS_OK) {
        r->failed = st;
        r->saved = *e;
        return st;
    }
    publish_chunk(r, rows, chunk);
    chunk->n_cols = r->n_cols;
    return TS_OK;
}
