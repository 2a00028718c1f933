/* data_internal.h: shared internals of the data readers: byte/line source, number parsing, reader state. */
#ifndef TS_IO_DATA_INTERNAL_H
#define TS_IO_DATA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "io/data.h"
#include "treescore.h"

/* ---- Byte and line source ------------------------------------------------------------
 *
 * A tsio_src reads a file descriptor through one buffer `buf` of `cap` bytes (plus one
 * slack byte, so that buf[end] is always writable: a token ending at the end of the
 * buffered data can be NUL-terminated in place). The unconsumed data is buf[start, end);
 * buf[start, scan) is known to hold no '\n'. The buffer starts at about 1 MiB and only
 * grows, up to `max_cap`, to hold one line of at most max_line bytes (plus CR LF).
 * `base` is the stream offset of buf[0], for error byte offsets.
 */
typedef struct tsio_src {
    int fd;
    int own_fd;           /* close fd at the end (not for stdin) */
    const char *name;     /* for messages; not owned */
    char *buf;
    size_t cap, max_cap;
    size_t start, end, scan;
    size_t max_line;
    int eof;              /* read() returned 0 */
    uint64_t line_no;     /* number of the last line returned (1-based) */
    uint64_t base;        /* stream offset of buf[0] */
    /* one pushed-back line (tsio_src_unread_line) */
    int pushed;
    char *pushed_p;
    size_t pushed_len;
    uint64_t pushed_byte;
} tsio_src;

typedef struct tsio_line {
    char *p;              /* inside the source buffer; p[len] is writable */
    size_t len;           /* without the '\n' and a CR before it */
    uint64_t line_no;     /* 1-based */
    uint64_t byte;        /* stream offset of p[0] */
} tsio_line;

/* Open `path` ("-" = standard input). `name` is kept by pointer for messages. */
ts_status tsio_src_open(tsio_src *s, const char *path, const char *name, size_t max_line, ts_error *err);
void tsio_src_close(tsio_src *s);
/* Buffer at least `want` unconsumed bytes, fewer only at end of input (want <= cap). */
ts_status tsio_src_fill(tsio_src *s, size_t want, ts_error *err);
/* The next line into *line; *got = 0 at end of input. A line longer than max_line is
 * TS_ERR_LIMIT. The line stays valid until the next call on this source. */
ts_status tsio_src_next_line(tsio_src *s, tsio_line *line, int *got, ts_error *err);
/* Make the next tsio_src_next_line return the line just returned again. */
void tsio_src_unread_line(tsio_src *s);
/* Skip n buffered bytes (n <= end - start), e.g. a byte-order mark. */
void tsio_src_skip(tsio_src *s, size_t n);
/* Read up to n bytes (buffered ones first); *got < n only at end of input. */
ts_status tsio_src_read(tsio_src *s, void *dst, size_t n, size_t *got, ts_error *err);

/* ---- Numbers -------------------------------------------------------------------------
 * Tokens are [s, s + n) inside a writable buffer with s[n] writable; they are restored
 * unchanged. Accepted: [+-]digits[.digits][e[+-]digits], [+-].digits..., nan and inf /
 * infinity in any case. The result is exactly strtof's / strtod's (nearest value).
 */
enum { TSIO_NUM_OK = 0, TSIO_NUM_BAD = 1, TSIO_NUM_RANGE = 2 };
int tsio_parse_f32(char *s, size_t n, float *out);
int tsio_parse_f64(char *s, size_t n, double *out);
/* The float token starting at s and ending at the first space or tab (or e): *end is
 * set to that end whatever the result. The SVMlight hot path. */
int tsio_parse_f32_field(char *s, const char *e, float *out, char **end);
int tsio_parse_f64_field(char *s, const char *e, double *out, char **end);
/* CSV missing markers: "", nan (any case), NA, N/A (any case). */
int tsio_is_missing_marker(const char *s, size_t n);
/* Printable, truncated (about 40 chars) copy of a token for messages. */
void tsio_token_text(const char *s, size_t n, char *out, size_t out_size);
#define TSIO_TOKEN_TEXT_SIZE 64

/* ---- Reader state ------------------------------------------------------------------- */

typedef struct tsio_span {
    char *p;               /* inside the line buffer; p[n] is writable */
    size_t n;
} tsio_span;

struct tsio_reader {
    tsio_data_options opts;
    tsio_data_format format;
    char *name;                 /* the path, or "<stdin>" */
    tsio_src src;
    uint32_t n_cols;
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

    /* SVMlight */
    uint32_t *seen;             /* seen[col] == seen_stamp: the column was set on this row */
    uint32_t seen_stamp;

    /* CSV / TSV */
    char sep;
    size_t n_fields;
    size_t label_col;           /* SIZE_MAX: none */
    tsio_span *fields;          /* n_fields spans */
    char **col_names;           /* CSV/TSV header: n_cols feature column names, or NULL */

    /* raw */
    uint64_t raw_rows;
};

/* Per-format hooks. `init` runs at open once the source is open and the format known:
 * it sets r->n_cols (and reads headers). `fill` appends rows to the chunk from row
 * *rows up to r->chunk_rows, setting r->at_eof at the end of input. */
ts_status tsio_svm_init(tsio_reader *r, ts_error *err);
ts_status tsio_svm_fill(tsio_reader *r, size_t *rows, ts_error *err);
ts_status tsio_csv_init(tsio_reader *r, ts_error *err);
ts_status tsio_csv_fill(tsio_reader *r, size_t *rows, ts_error *err);
ts_status tsio_raw_init(tsio_reader *r, ts_error *err);
ts_status tsio_raw_fill(tsio_reader *r, size_t *rows, ts_error *err);

/* Core helpers for the formats. */
/* The qid of a row that carries none: the query file's group index, or -1. */
ts_status tsio_row_query(tsio_reader *r, const tsio_line *ln, int64_t *qid, ts_error *err);
/* Store a comment for row `row` of the current chunk (copied into the arena). */
ts_status tsio_set_comment(tsio_reader *r, size_t row, const char *s, size_t n, ts_error *err);
/* Report "NAME:LINE: what 'token'" as TS_ERR_PARSE at the token's offset. */
ts_status tsio_fail_token(tsio_reader *r, const tsio_line *ln, const char *tok, size_t n, const char *what,
                          ts_error *err);

#endif /* TS_IO_DATA_INTERNAL_H */
