/* data_raw.c: the raw float32 matrix format ("TSRAWF32" header + little-endian rows): reader and writer. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/error.h"
#include "data/data_raw.h"

#define RAW_VERSION 1u

/* The raw format's state (r->fmt): the row count its header declares. */
typedef struct raw_state {
    uint64_t rows;
} raw_state;

static raw_state *raw_of(const tsio_reader *r) { return r->fmt; }

static int host_is_little_endian(void) {
    const uint32_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

static void swap_words(void *data, size_t n) {
    unsigned char *p = data;
    size_t i;
    for (i = 0; i < n; i++, p += 4) {
        unsigned char t = p[0];
        p[0] = p[3];
        p[3] = t;
        t = p[1];
        p[1] = p[2];
        p[2] = t;
    }
}

static uint32_t get_u32le(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64le(const unsigned char *p) { return (uint64_t)get_u32le(p) | (uint64_t)get_u32le(p + 4) << 32; }

static void put_u32le(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

static void put_u64le(unsigned char *p, uint64_t v) {
    put_u32le(p, (uint32_t)v);
    put_u32le(p + 4, (uint32_t)(v >> 32));
}

static ts_status raw_init(tsio_reader *r, ts_error *err) {
    unsigned char h[TSIO_RAW_HEADER_SIZE];
    size_t got;
    uint32_t version, n_cols;
    raw_state *w = calloc(1, sizeof *w);
    if (!w) return ts_fail(err, TS_ERR_NO_MEMORY, "%s: out of memory", r->name);
    r->fmt = w;
    TS_TRY(tsio_src_read(&r->src, h, sizeof h, &got, err));
    if (got < sizeof h)
        return ts_fail(err, TS_ERR_PARSE, "%s: not a raw float32 matrix: %zu bytes, shorter than the %d-byte header",
                       r->name, got, TSIO_RAW_HEADER_SIZE);
    if (memcmp(h, TSIO_RAW_MAGIC, 8) != 0)
        return ts_fail(err, TS_ERR_PARSE, "%s: not a raw float32 matrix (the file does not start with \"%s\")", r->name,
                       TSIO_RAW_MAGIC);
    version = get_u32le(h + 8);
    n_cols = get_u32le(h + 12);
    raw_of(r)->rows = get_u64le(h + 16);
    if (version != RAW_VERSION)
        return ts_fail(err, TS_ERR_UNSUPPORTED, "%s: raw matrix version %u, this reader knows version %u", r->name,
                       version, RAW_VERSION);
    if (n_cols == 0) return ts_fail(err, TS_ERR_PARSE, "%s: raw matrix header says 0 columns", r->name);
    if (n_cols > TSIO_MAX_COLS)
        return ts_fail(err, TS_ERR_LIMIT, "%s: raw matrix header says %u columns (limit %u)", r->name, n_cols,
                       TSIO_MAX_COLS);
    if (raw_of(r)->rows > (UINT64_MAX - TSIO_RAW_HEADER_SIZE) / 4 / n_cols) /* the file size below fits */
        return ts_fail(err, TS_ERR_PARSE, "%s: raw matrix header says %llu rows of %u columns: too large", r->name,
                       (unsigned long long)raw_of(r)->rows, n_cols);
    if (r->opts.n_cols > 0 && n_cols != r->opts.n_cols)
        return ts_fail(err, TS_ERR_SHAPE, "%s: %u columns, expected %u", r->name, n_cols, r->opts.n_cols);
    /* A regular file must hold what the header declares: check before anything is
     * allocated from the header's numbers (a pipe is checked as it is read). */
    struct stat st;
    if (fstat(r->src.fd, &st) == 0 && S_ISREG(st.st_mode)) {
        uint64_t want = (uint64_t)TSIO_RAW_HEADER_SIZE + raw_of(r)->rows * n_cols * 4u;
        if ((uint64_t)st.st_size < want)
            return ts_fail(err, TS_ERR_PARSE, "%s: truncated: the header declares %llu rows of %u columns (%llu bytes) "
                           "but the file has %llu bytes",
                           r->name, (unsigned long long)raw_of(r)->rows, n_cols, (unsigned long long)want,
                           (unsigned long long)st.st_size);
    }
    r->n_cols = n_cols;
    return TS_OK;
}

/* After the declared rows: nothing may follow. */
static ts_status check_trailing(tsio_reader *r, ts_error *err) {
    unsigned char extra[1];
    size_t got;
    TS_TRY(tsio_src_read(&r->src, extra, 1, &got, err));
    if (got)
        return ts_fail(err, TS_ERR_PARSE, "%s: data after the %llu rows the raw header declares", r->name,
                       (unsigned long long)raw_of(r)->rows);
    return TS_OK;
}

static ts_status raw_fill(tsio_reader *r, size_t *rows, ts_error *err) {
    uint64_t left = raw_of(r)->rows - r->rows_total;
    size_t n = left < r->chunk_rows ? (size_t)left : r->chunk_rows;
    size_t row_bytes = (size_t)r->n_cols * sizeof(float), got, i;
    if (n == 0) {
        r->at_eof = 1;
        *rows = 0;
        return check_trailing(r, err);
    }
    TS_TRY(tsio_src_read(&r->src, r->x, n * row_bytes, &got, err));
    if (got < n * row_bytes)
        return ts_fail(err, TS_ERR_PARSE, "%s: truncated: header says %llu rows, file ends after %llu", r->name,
                       (unsigned long long)raw_of(r)->rows, (unsigned long long)(r->rows_total + got / row_bytes));
    if (!host_is_little_endian()) swap_words(r->x, n * r->n_cols);
    for (i = 0; i < n; i++) {
        r->labels[i] = NAN;
        TS_TRY(tsio_row_query(r, NULL, &r->qids[i], err));
    }
    *rows = n;
    return TS_OK;
}

static void raw_close(tsio_reader *r) {
    free(r->fmt);
    r->fmt = NULL;
}

const tsio_format_ops tsio_raw_ops = {raw_init, raw_fill, raw_close};

/* Write n floats little-endian, through a bounce buffer on big-endian hosts. */
static int write_floats(FILE *f, const float *x, size_t n) {
    unsigned char tmp[4096 * 4];
    if (n == 0) return 1;
    if (host_is_little_endian()) return fwrite(x, sizeof(float), n, f) == n;
    while (n > 0) {
        size_t k = n < 4096 ? n : 4096;
        memcpy(tmp, x, k * 4);
        swap_words(tmp, k);
        if (fwrite(tmp, 4, k, f) != k) return 0;
        x += k;
        n -= k;
    }
    return 1;
}

ts_status tsio_write_raw(const char *path, const float *x, uint64_t n_rows, uint32_t n_cols, ts_error *err) {
    unsigned char h[TSIO_RAW_HEADER_SIZE];
    int to_stdout, ok;
    FILE *f;
    if (!path || (!x && n_rows > 0)) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "tsio_write_raw: NULL argument");
    if (n_cols == 0) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "tsio_write_raw: n_cols is 0");
    if (n_rows > SIZE_MAX / 4 / n_cols)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "tsio_write_raw: %llu x %u floats is too large",
                       (unsigned long long)n_rows, n_cols);
    to_stdout = strcmp(path, "-") == 0;
    f = to_stdout ? stdout : fopen(path, "wb");
    if (!f) return ts_fail(err, TS_ERR_IO, "cannot open '%s' for writing: %s", path, strerror(errno));
    memcpy(h, TSIO_RAW_MAGIC, 8);
    put_u32le(h + 8, RAW_VERSION);
    put_u32le(h + 12, n_cols);
    put_u64le(h + 16, n_rows);
    ok = fwrite(h, 1, sizeof h, f) == sizeof h && write_floats(f, x, (size_t)n_rows * n_cols);
    ok = (to_stdout ? fflush(f) == 0 : fclose(f) == 0) && ok;
    if (!ok) {
        int e = errno;
        if (!to_stdout) remove(path);
        return ts_fail(err, TS_ERR_IO, "error writing '%s': %s", path, strerror(e));
    }
    return TS_OK;
}
