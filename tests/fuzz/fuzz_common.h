/* fuzz_common.h: shared checks for the libFuzzer targets (model loaders, data readers, engines). */
#ifndef TS_FUZZ_COMMON_H
#define TS_FUZZ_COMMON_H

/* memfd_create is a GNU extension; the build defines _POSIX_C_SOURCE only. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "data/data.h"
#include "io/loaders.h"
#include "model/forest.h"
#include "treescore.h"

/*
 * Every target aborts (a crash libFuzzer records) when the library breaks a promise of
 * its contracts, not only on memory errors:
 *   - a failing call returns the status it stores in err, a non-empty NUL-terminated
 *     message (naming the input, for model loaders), leaves *out NULL, and reports a
 *     line no larger than the input has;
 *   - a loaded model's info is self-consistent;
 *   - a data reader's chunks respect chunk_rows, keep their column count, and number
 *     rows and lines consecutively.
 * The functions are static inline so every target can include this header.
 */

#define FUZZ_NAME "fuzz-input"

static inline void fuzz_die(const char *what, const ts_error *err) {
    fprintf(stderr, "fuzz contract violation: %s\n", what);
    if (err) fprintf(stderr, "  status %s line %llu byte %llu: %s\n", ts_status_name(err->status),
                     err->line, err->byte, err->message);
    abort();
}

/* Number of lines of a buffer (a last line without newline counts). */
static inline unsigned long long fuzz_count_lines(const uint8_t *data, size_t size) {
    unsigned long long n = 1;
    for (size_t i = 0; i < size; i++) n += data[i] == '\n';
    return n;
}

/* Checks the error channel after a call that returned `st`. `n_lines`: lines of the
 * input (0 = unknown, no line check). */
static inline void fuzz_check_error(ts_status st, const ts_error *err, unsigned long long n_lines) {
    if (st == TS_OK) return;
    if (err->status != st) fuzz_die("returned status differs from err->status", err);
    if (memchr(err->message, '\0', sizeof err->message) == NULL) fuzz_die("message not terminated", NULL);
    if (err->message[0] == '\0') fuzz_die("failure with an empty message", err);
    if (n_lines && err->line > n_lines) fuzz_die("error line past the end of the input", err);
}

/* Checks ts_model_get_info on a loaded model against the forest it describes. */
static inline void fuzz_check_model(const ts_model *m) {
    ts_model_info info;
    ts_error err;
    memset(&err, 0, sizeof err);
    if (ts_model_get_info(m, &info, NULL) != TS_OK) fuzz_die("ts_model_get_info failed on a loaded model", NULL);
    if (info.n_trees != m->n_trees) fuzz_die("info.n_trees", NULL);
    if (info.n_leaves != info.n_internal_nodes + info.n_trees) fuzz_die("info: leaves != nodes + trees", NULL);
    if (info.n_features < info.n_features_declared) fuzz_die("info: n_features < declared", NULL);
    if (info.n_features_used > info.n_features) fuzz_die("info: features used > n_features", NULL);
    if (memchr(info.objective, '\0', sizeof info.objective) == NULL) fuzz_die("info.objective not terminated", NULL);
    for (uint32_t t = 0; t < m->n_trees; t++) {
        const tsm_tree *tr = &m->trees[t];
        if (tr->n_leaves != tr->n_nodes + 1) fuzz_die("tree: n_leaves != n_nodes + 1", NULL);
        for (uint32_t i = 0; i < tr->n_nodes; i++)
            if (tr->nodes[i].feature >= ((tr->nodes[i].flags & TSM_DERIVED) ? m->n_derived : m->n_features))
                fuzz_die("split feature >= n_features (or derived column >= n_derived)", NULL);
    }
}

/* Model loaders name their input in every message ("NAME:LINE: what"), out of memory aside. */
static inline void fuzz_check_named(ts_status st, const ts_error *err) {
    if (st != TS_OK && st != TS_ERR_NO_MEMORY && strstr(err->message, FUZZ_NAME) == NULL)
        fuzz_die("load error message does not name the input", err);
}

/* Runs one loader on the input and checks the outcome. */
typedef ts_status (*fuzz_loader_fn)(const char *, size_t, const char *, ts_model **, ts_error *);

static inline void fuzz_one_loader(fuzz_loader_fn load, const uint8_t *data, size_t size) {
    ts_model *m = (ts_model *)(uintptr_t)1; /* must be reset to NULL on failure */
    ts_error err;
    memset(&err, 0, sizeof err);
    /* Copy into an exact-size heap block so ASan catches any read past size. */
    char *buf = malloc(size ? size : 1);
    if (!buf) return;
    if (size) memcpy(buf, data, size);
    ts_status st = load(buf, size, FUZZ_NAME, &m, &err);
    free(buf);
    if (st != TS_OK) {
        if (m != NULL) fuzz_die("*out not NULL after a failed load", &err);
        fuzz_check_error(st, &err, fuzz_count_lines(data, size));
        fuzz_check_named(st, &err);
        return;
    }
    if (!m) fuzz_die("TS_OK but *out is NULL", NULL);
    fuzz_check_model(m);
    ts_model_free(m);
}

/* ---- data readers ----------------------------------------------------------------- */

/* The input goes to one memfd per process, rewritten on every call, opened by path. */
static int fuzz_fd_ = -1, fuzz_qfd_ = -1;
/* Lines of the current query file (0 = none): errors in it may name any of its lines. */
static unsigned long long fuzz_query_lines_ = 0;

static inline int fuzz_put(int *fd, const char *label, const uint8_t *data, size_t size, char *path, size_t cap) {
    if (*fd < 0) {
        *fd = memfd_create(label, 0);
        if (*fd < 0) {
            perror("memfd_create");
            abort();
        }
    }
    if (ftruncate(*fd, 0) != 0) abort();
    size_t done = 0;
    while (done < size) {
        ssize_t w = pwrite(*fd, data + done, size - done, (off_t)done);
        if (w <= 0) abort();
        done += (size_t)w;
    }
    snprintf(path, cap, "/proc/self/fd/%d", *fd);
    return 0;
}

/* Reads the whole input through a reader with `o`, touching every produced value, and
 * checks the chunk invariants. `raw` relaxes the line checks (raw files have no lines). */
static inline void fuzz_read_all(const uint8_t *data, size_t size, const tsio_data_options *o, int raw) {
    char path[64];
    fuzz_put(&fuzz_fd_, "fuzz-data", data, size, path, sizeof path);
    tsio_reader *r = (tsio_reader *)(uintptr_t)1;
    ts_error err;
    memset(&err, 0, sizeof err);
    unsigned long long n_lines = raw ? 0 : fuzz_count_lines(data, size);
    unsigned long long err_lines = n_lines && fuzz_query_lines_ > n_lines ? fuzz_query_lines_ : n_lines;
    ts_status st = tsio_reader_open(path, o, &r, &err);
    if (st != TS_OK) {
        if (r != NULL) fuzz_die("reader not NULL after a failed open", &err);
        fuzz_check_error(st, &err, err_lines);
        return;
    }
    if (!r) fuzz_die("open TS_OK but reader NULL", NULL);
    uint32_t n_cols = tsio_reader_n_cols(r);
    if (o->n_cols && n_cols != o->n_cols) fuzz_die("reader n_cols differs from the requested n_cols", NULL);
    size_t chunk_rows = o->chunk_rows ? o->chunk_rows : TSIO_DEFAULT_CHUNK_ROWS;
    uint64_t rows = 0, last_line = 0;
    volatile double sink = 0;
    for (;;) {
        tsio_chunk c;
        memset(&c, 0, sizeof c);
        st = tsio_reader_next(r, &c, &err);
        if (st != TS_OK) {
            fuzz_check_error(st, &err, err_lines);
            break;
        }
        if (c.n_rows == 0) break;
        if (c.n_rows > chunk_rows) fuzz_die("chunk larger than chunk_rows", NULL);
        if (c.n_cols != n_cols) fuzz_die("chunk n_cols differs from tsio_reader_n_cols", NULL);
        if (c.first_row != rows) fuzz_die("chunk first_row not consecutive", NULL);
        if (!raw) {
            if (c.first_line <= last_line) fuzz_die("chunk first_line not increasing", NULL);
            if (c.first_line < c.first_row + 1) fuzz_die("chunk first_line < first_row + 1", NULL);
            if (c.first_line > n_lines) fuzz_die("chunk first_line past the input", NULL);
            last_line = c.first_line;
        }
        for (size_t i = 0; i < c.n_rows * (size_t)c.n_cols; i++) sink += c.x[i];
        for (size_t i = 0; i < c.n_rows; i++) {
            sink += c.labels[i] + (double)c.qids[i];
            if (c.comments && c.comments[i]) sink += (double)strlen(c.comments[i]);
        }
        rows += c.n_rows;
        /* Every row with columns costs at least one input byte (a line, or 4 bytes per
         * raw column); more rows than bytes means a runaway reader. */
        if (rows > (uint64_t)size + 1) {
            if (n_cols == 0) break; /* zero-column rows cost no bytes: stop, not a bug here */
            fuzz_die("more rows than input bytes", NULL);
        }
    }
    (void)sink;
    tsio_reader_close(r);
}

/* Writes the query-file part of an input to its own memfd; returns its path in `path`. */
static inline const char *fuzz_query_file(const uint8_t *data, size_t size, char *path, size_t cap) {
    fuzz_put(&fuzz_qfd_, "fuzz-query", data, size, path, cap);
    fuzz_query_lines_ = fuzz_count_lines(data, size);
    return path;
}

#endif /* TS_FUZZ_COMMON_H */
