/* data_core.h: reader core of the data readers: reader state, format hooks, query file, comments, errors. */
#ifndef TS_DATA_DATA_CORE_H
#define TS_DATA_DATA_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "data/data.h"
#include "io/num.h"
#include "io/source.h"
#include "io/text.h"
#include "treescore.h"

/*
 * Layers of the data readers (each includes only the ones below it):
 *   data_reader.c                       the tsio_reader API: options, format resolution, chunks
 *   data_svmlight.c data_csv.c data_raw.c   one format each, behind a tsio_format_ops
 *   data_core.{h,c}                     reader state, query file, comments, token errors
 *   io/source, io/num, io/text          line source, number parser, messages (io's reader core)
 * A format keeps its own state in r->fmt (allocated by its init, freed by its close).
 */

typedef struct tsio_span {
    char *p;               /* inside the line buffer; p[n] is writable */
    size_t n;
} tsio_span;

/* A format's hooks. `init` runs at open once the source is open and the format known:
 * it sets r->n_cols (reading headers) and may set r->fmt. `fill` appends rows to the
 * chunk from row *rows up to r->chunk_rows, setting r->at_eof at the end of input.
 * `close` frees r->fmt (it runs even when init failed half way). */
typedef struct tsio_format_ops {
    ts_status (*init)(tsio_reader *r, ts_error *err);
    ts_status (*fill)(tsio_reader *r, size_t *rows, ts_error *err);
    void (*close)(tsio_reader *r);
} tsio_format_ops;

struct tsio_reader {
    tsio_data_options opts;
    tsio_data_format format;
    const tsio_format_ops *ops; /* the format's hooks; NULL until the format is known */
    void *fmt;                  /* the format's own state, or NULL */
    char *name;                 /* the path, or "<stdin>" */
    tsio_src src;
    uint32_t n_cols;
    char **col_names;           /* n_cols feature column names (a CSV/TSV header), or NULL */
    size_t chunk_rows;          /* effective: opts->chunk_rows capped so x stays bounded */

    /* one chunk; allocated once, reused */
    float *x;              /* the chunk matrix, or NULL when xd holds it */
    double *xd;            /* double_values on a text format */
    double *labels;
    int64_t *qids;
    const char **comments;
    size_t *comment_off;        /* offsets into arena while the chunk fills; SIZE_MAX = none */
    char *arena;
    size_t arena_len, arena_cap;

    uint64_t rows_total;        /* rows handed out so far */
    uint64_t chunk_first_line;
    int at_eof;                 /* the source is exhausted; the next call ends */
    int done;                   /* the end was reported */
    ts_status failed;           /* sticky error */
    ts_error saved;

    /* query file */
    int has_query;
    char *query_name;
    tsio_src qsrc;
    uint64_t q_left;            /* rows left in the current group */
    int64_t q_index;            /* current group index, -1 before the first */
    uint64_t q_sum;             /* sum of the sizes read so far */
};

/* Open opts.query_file, when there is one. */
ts_status tsio_query_open(tsio_reader *r, ts_error *err);
/* The qid of a row that carries none: the query file's group index, or -1. */
ts_status tsio_row_query(tsio_reader *r, const tsio_line *ln, int64_t *qid, ts_error *err);
/* At the end of input: the query sizes must add up to the rows read. */
ts_status tsio_query_check_end(tsio_reader *r, ts_error *err);
/* Store a comment for row `row` of the current chunk (copied into the arena). */
ts_status tsio_set_comment(tsio_reader *r, size_t row, const char *s, size_t n, ts_error *err);
/* Report "NAME:LINE: what 'token'" as TS_ERR_PARSE at the token's offset. */
ts_status tsio_fail_token(tsio_reader *r, const tsio_line *ln, const char *tok, size_t n, const char *what,
                          ts_error *err);
/* "NAME:LINE: NUL byte in a text line" when the line holds a NUL byte, else TS_OK. */
ts_status tsio_check_text_line(const tsio_reader *r, const tsio_line *ln, ts_error *err);

#endif /* TS_DATA_DATA_CORE_H */
