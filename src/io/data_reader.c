/* data_reader.c: the tsio_reader API, format resolution, the buffered byte/line source and number parsing. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "io/data_internal.h"

/* Reads go through a buffer of this size (larger only to hold one long line). */
#define TSIO_READ_BLOCK ((size_t)1 << 20)
/* The chunk matrix is kept under this many bytes by lowering chunk_rows (at least 1 row). */
#define TSIO_MAX_CHUNK_BYTES ((size_t)64 << 20)
#define TSIO_MAX_CHUNK_ROWS ((size_t)1 << 20)

/* ==== Byte and line source ============================================================ */

ts_status tsio_src_open(tsio_src *s, const char *path, const char *name, size_t max_line, ts_error *err) {
    struct stat st;
    size_t need;
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->name = name;
    if (max_line > SIZE_MAX / 4) max_line = SIZE_MAX / 4;
    s->max_line = max_line;
    need = max_line + 3; /* the line, CR, LF */
    s->max_cap = need > TSIO_READ_BLOCK ? need : TSIO_READ_BLOCK;
    s->cap = s->max_cap <= 2 * TSIO_READ_BLOCK ? s->max_cap : TSIO_READ_BLOCK;
    if (strcmp(path, "-") == 0) {
        s->fd = STDIN_FILENO;
    } else {
        do {
            s->fd = open(path, O_RDONLY);
        } while (s->fd < 0 && errno == EINTR);
        if (s->fd < 0) return ts_fail(err, TS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        s->own_fd = 1;
        if (fstat(s->fd, &st) == 0 && S_ISDIR(st.st_mode)) {
            tsio_src_close(s);
            return ts_fail(err, TS_ERR_IO, "%s: cannot read: %s", path, strerror(EISDIR));
        }
    }
    s->buf = malloc(s->cap + 1);
    if (!s->buf) {
        tsio_src_close(s);
        return ts_fail(err, TS_ERR_NO_MEMORY, "%s: out of memory for the read buffer", name);
    }
    return TS_OK;
}

void tsio_src_close(tsio_src *s) {
    if (s->own_fd && s->fd >= 0) close(s->fd);
    s->fd = -1;
    s->own_fd = 0;
    free(s->buf);
    s->buf = NULL;
}

/* Append what one read() gives to buf[end, cap); sets eof on 0. */
static ts_status src_read_more(tsio_src *s, ts_error *err) {
    for (;;) {
        ssize_t k = read(s->fd, s->buf + s->end, s->cap - s->end);
        if (k > 0) {
            s->end += (size_t)k;
            return TS_OK;
        }
        if (k == 0) {
            s->eof = 1;
            return TS_OK;
        }
        if (errno != EINTR) return ts_fail(err, TS_ERR_IO, "%s: read error: %s", s->name, strerror(errno));
    }
}

/* Move the unconsumed bytes to the front of the buffer. */
static void src_compact(tsio_src *s) {
    size_t n = s->end - s->start;
    if (s->start == 0) return;
    memmove(s->buf, s->buf + s->start, n);
    s->base += s->start;
    s->scan -= s->start;
    s->end = n;
    s->start = 0;
}

static ts_status src_grow(tsio_src *s, size_t want, ts_error *err) {
    size_t cap = s->cap;
    char *nb;
    while (cap < want && cap < s->max_cap) cap = cap > s->max_cap / 2 ? s->max_cap : cap * 2;
    if (cap == s->cap) return TS_OK;
    nb = realloc(s->buf, cap + 1);
    if (!nb) return ts_fail(err, TS_ERR_NO_MEMORY, "%s: out of memory for a %zu-byte line buffer", s->name, cap);
    s->buf = nb;
    s->cap = cap;
    return TS_OK;
}

ts_status tsio_src_fill(tsio_src *s, size_t want, ts_error *err) {
    while (s->end - s->start < want && !s->eof) {
        if (s->cap - s->start < want) {
            src_compact(s);
            if (s->cap < want) TS_TRY(src_grow(s, want, err));
        }
        TS_TRY(src_read_more(s, err));
    }
    return TS_OK;
}

void tsio_src_skip(tsio_src *s, size_t n) {
    s->start += n;
    if (s->scan < s->start) s->scan = s->start;
}

static ts_status src_too_long(tsio_src *s, ts_error *err) {
    return ts_fail_at(err, TS_ERR_LIMIT, s->line_no + 1, s->base + s->start, "%s:%llu: line longer than %zu bytes",
                      s->name, (unsigned long long)(s->line_no + 1), s->max_line);
}

/* Hand out buf[start, stop) (less a trailing CR) and continue at `next`. */
static ts_status src_take_line(tsio_src *s, size_t stop, size_t next, tsio_line *line, ts_error *err) {
    size_t len = stop - s->start;
    if (len > 0 && s->buf[stop - 1] == '\r') len--;
    if (len > s->max_line) return src_too_long(s, err);
    s->line_no++;
    line->p = s->buf + s->start;
    line->len = len;
    line->line_no = s->line_no;
    line->byte = s->base + s->start;
    s->pushed_p = line->p;
    s->pushed_len = len;
    s->pushed_byte = line->byte;
    s->start = s->scan = next;
    return TS_OK;
}

ts_status tsio_src_next_line(tsio_src *s, tsio_line *line, int *got, ts_error *err) {
    *got = 0;
    if (s->pushed) {
        s->pushed = 0;
        line->p = s->pushed_p;
        line->len = s->pushed_len;
        line->line_no = s->line_no;
        line->byte = s->pushed_byte;
        *got = 1;
        return TS_OK;
    }
    for (;;) {
        /* Invariant: buf[start, scan) holds no '\n'; each byte is searched once. */
        char *nl = memchr(s->buf + s->scan, '\n', s->end - s->scan);
        if (nl) {
            size_t pos = (size_t)(nl - s->buf);
            TS_TRY(src_take_line(s, pos, pos + 1, line, err));
            *got = 1;
            return TS_OK;
        }
        s->scan = s->end;
        if (s->end - s->start > s->max_line + 1) return src_too_long(s, err);
        if (s->eof) {
            if (s->start == s->end) return TS_OK;
            TS_TRY(src_take_line(s, s->end, s->end, line, err));
            *got = 1;
            return TS_OK;
        }
        /* Room for more: each partial line is moved at most once (start becomes 0). */
        if (s->start > 0 && s->cap - s->end < s->cap / 2) src_compact(s);
        if (s->end == s->cap) TS_TRY(src_grow(s, s->cap + 1, err));
        TS_TRY(src_read_more(s, err));
    }
}

void tsio_src_unread_line(tsio_src *s) { s->pushed = 1; }

ts_status tsio_src_read(tsio_src *s, void *dst, size_t n, size_t *got, ts_error *err) {
    char *out = dst;
    size_t done = s->end - s->start;
    if (done > n) done = n;
    memcpy(out, s->buf + s->start, done);
    s->start += done;
    if (s->scan < s->start) s->scan = s->start;
    if (s->start == s->end) { /* buffer drained: reads go straight to dst */
        s->base += s->end;
        s->start = s->end = s->scan = 0;
    }
    while (done < n && !s->eof) {
        size_t want = n - done;
        ssize_t k;
        if (want > ((size_t)1 << 30)) want = (size_t)1 << 30;
        k = read(s->fd, out + done, want);
        if (k > 0) {
            done += (size_t)k;
            s->base += (uint64_t)k;
        } else if (k == 0) {
            s->eof = 1;
        } else if (errno != EINTR) {
            return ts_fail(err, TS_ERR_IO, "%s: read error: %s", s->name, strerror(errno));
        }
    }
    *got = done;
    return TS_OK;
}

/* ==== Numbers ========================================================================= */

/* A decimal token split into sign, up to 19 significant digits and a power of ten. */
typedef struct tsio_decimal {
    int neg;
    uint64_t m;     /* significant digits (exact when !inexact) */
    long exp10;     /* value = m * 10^exp10 */
    int inexact;    /* digits were dropped: only strtof/strtod may round it */
} tsio_decimal;

static int ascii_lower(int c) { return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c; }

static int same_ci(const char *s, size_t n, const char *word) {
    size_t i;
    for (i = 0; i < n; i++)
        if (word[i] == '\0' || ascii_lower((unsigned char)s[i]) != word[i]) return 0;
    return word[n] == '\0';
}

/* 1 nan, 2 inf (sign in *neg), 0 neither. */
static int special_value(const char *s, size_t n, int *neg) {
    *neg = 0;
    if (n > 0 && (s[0] == '+' || s[0] == '-')) {
        *neg = s[0] == '-';
        s++;
        n--;
    }
    if (same_ci(s, n, "nan")) return 1;
    if (same_ci(s, n, "inf") || same_ci(s, n, "infinity")) return 2;
    return 0;
}

static int is_digit(char c) { return (unsigned)(c - '0') < 10u; }

/* Parse [+-]digits[.digits][(e|E)[+-]digits] (digits on at least one side of '.'). */
static int scan_decimal(const char *s, size_t n, tsio_decimal *d) {
    size_t i = 0, digits = 0;
    int sig = 0;
    long ex = 0;
    memset(d, 0, sizeof *d);
    if (i < n && (s[i] == '+' || s[i] == '-')) d->neg = s[i++] == '-';
    for (; i < n && is_digit(s[i]); i++, digits++) {
        unsigned v = (unsigned)(s[i] - '0');
        if (d->m == 0 && v == 0) continue;
        if (sig < 19) {
            d->m = d->m * 10 + v;
            sig++;
        } else {
            d->inexact = 1;
            d->exp10++;
        }
    }
    if (i < n && s[i] == '.') {
        for (i++; i < n && is_digit(s[i]); i++, digits++) {
            unsigned v = (unsigned)(s[i] - '0');
            if (d->m == 0 && v == 0) {
                d->exp10--;
            } else if (sig < 19) {
                d->m = d->m * 10 + v;
                sig++;
                d->exp10--;
            } else {
                d->inexact = 1;
            }
        }
    }
    if (digits == 0) return 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        int eneg = 0;
        size_t e0;
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) eneg = s[i++] == '-';
        for (e0 = i; i < n && is_digit(s[i]); i++)
            if (ex < 100000000L) ex = ex * 10 + (s[i] - '0');
        if (i == e0) return 0;
        d->exp10 += eneg ? -ex : ex;
    }
    return i == n;
}

/* The common case quickly: [+-]digits[.digits][e[+-]digits] with at most 19 digits in
 * all, starting at s. Returns the end of that prefix, or NULL when it does not apply
 * (the callers then fall back to scan_decimal on the whole token). */
static const char *scan_short_decimal(const char *p, const char *e, tsio_decimal *d) {
    const char *d0, *f0;
    size_t nd;
    d->neg = 0;
    d->m = 0;
    d->exp10 = 0;
    d->inexact = 0;
    if (p < e && (*p == '-' || *p == '+')) d->neg = *p++ == '-';
    for (d0 = p; p < e && is_digit(*p); p++) d->m = d->m * 10 + (uint64_t)(*p - '0');
    nd = (size_t)(p - d0);
    if (p < e && *p == '.') {
        for (f0 = ++p; p < e && is_digit(*p); p++) d->m = d->m * 10 + (uint64_t)(*p - '0');
        nd += (size_t)(p - f0);
        d->exp10 = -(long)(p - f0);
    }
    if (nd == 0 || nd > 19) return NULL;
    if (p < e && (*p == 'e' || *p == 'E')) {
        long ex = 0;
        int eneg = 0;
        const char *e0;
        p++;
        if (p < e && (*p == '+' || *p == '-')) eneg = *p++ == '-';
        for (e0 = p; p < e && is_digit(*p); p++)
            if (ex < 100000000L) ex = ex * 10 + (*p - '0');
        if (p == e0) return NULL;
        d->exp10 += eneg ? -ex : ex;
    }
    return p;
}

static const float f32_pow10[] = {1e0f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f, 1e6f, 1e7f, 1e8f, 1e9f, 1e10f};
static const double f64_pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                   1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Clinger's fast path is exact only when float/double arithmetic is not done in wider
 * precision: m and 10^k are both exact, so one IEEE multiply/divide rounds once. */
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
#define TSIO_FAST_PATH 1
#else
#define TSIO_FAST_PATH 0
#endif

static void strip_zeros(tsio_decimal *d) {
    while (d->m != 0 && d->m % 10 == 0) {
        d->m /= 10;
        d->exp10++;
    }
}

/* Fast exact float: m <= 2^24 and |exp10| <= 10. Returns 1 when it applied. */
static int fast_f32(tsio_decimal *d, float *out) {
    float v;
    if (!TSIO_FAST_PATH || d->inexact) return 0;
    if (d->m == 0) {
        *out = d->neg ? -0.0f : 0.0f;
        return 1;
    }
    if (d->m > (1u << 24)) strip_zeros(d);
    if (d->m > (1u << 24) || d->exp10 < -10 || d->exp10 > 10) return 0;
    v = (float)d->m;
    v = d->exp10 < 0 ? v / f32_pow10[-d->exp10] : v * f32_pow10[d->exp10];
    *out = d->neg ? -v : v;
    return 1;
}

static int fast_f64(tsio_decimal *d, double *out) {
    double v;
    if (!TSIO_FAST_PATH || d->inexact) return 0;
    if (d->m == 0) {
        *out = d->neg ? -0.0 : 0.0;
        return 1;
    }
    if (d->m > ((uint64_t)1 << 53)) strip_zeros(d);
    if (d->m > ((uint64_t)1 << 53) || d->exp10 < -22 || d->exp10 > 22) return 0;
    v = (double)d->m;
    v = d->exp10 < 0 ? v / f64_pow10[-d->exp10] : v * f64_pow10[d->exp10];
    *out = d->neg ? -v : v;
    return 1;
}

int tsio_parse_f32(char *s, size_t n, float *out) {
    tsio_decimal d;
    char save, *end;
    float v;
    int neg;
    if (scan_short_decimal(s, s + n, &d) == s + n && fast_f32(&d, out)) return TSIO_NUM_OK;
    if (!scan_decimal(s, n, &d)) {
        switch (special_value(s, n, &neg)) {
        case 1: *out = NAN; return TSIO_NUM_OK;
        case 2: *out = neg ? -INFINITY : INFINITY; return TSIO_NUM_OK;
        default: return TSIO_NUM_BAD;
        }
    }
    if (fast_f32(&d, out)) return TSIO_NUM_OK;
    save = s[n];
    s[n] = '\0';
    v = strtof(s, &end);
    s[n] = save;
    if (end != s + n) return TSIO_NUM_BAD;
    if (isinf(v)) return TSIO_NUM_RANGE;
    *out = v;
    return TSIO_NUM_OK;
}

int tsio_parse_f32_field(char *s, const char *e, float *out, char **end) {
    tsio_decimal d;
    const char *p = scan_short_decimal(s, e, &d);
    char *t;
    if (p && (p == e || *p == ' ' || *p == '\t') && fast_f32(&d, out)) {
        *end = s + (p - s);
        return TSIO_NUM_OK;
    }
    for (t = s; t < e && *t != ' ' && *t != '\t'; t++) continue;
    *end = t;
    return tsio_parse_f32(s, (size_t)(t - s), out);
}

int tsio_parse_f64_field(char *s, const char *e, double *out, char **end) {
    tsio_decimal d;
    const char *p = scan_short_decimal(s, e, &d);
    char *t;
    if (p && (p == e || *p == ' ' || *p == '\t') && fast_f64(&d, out)) {
        *end = s + (p - s);
        return TSIO_NUM_OK;
    }
    for (t = s; t < e && *t != ' ' && *t != '\t'; t++) continue;
    *end = t;
    return tsio_parse_f64(s, (size_t)(t - s), out);
}

int tsio_parse_f64(char *s, size_t n, double *out) {
    tsio_decimal d;
    char save, *end;
    double v;
    int neg;
    if (scan_short_decimal(s, s + n, &d) == s + n && fast_f64(&d, out)) return TSIO_NUM_OK;
    if (!scan_decimal(s, n, &d)) {
        switch (special_value(s, n, &neg)) {
        case 1: *out = NAN; return TSIO_NUM_OK;
        case 2: *out = neg ? -INFINITY : INFINITY; return TSIO_NUM_OK;
        default: return TSIO_NUM_BAD;
        }
    }
    if (fast_f64(&d, out)) return TSIO_NUM_OK;
    save = s[n];
    s[n] = '\0';
    v = strtod(s, &end);
    s[n] = save;
    if (end != s + n) return TSIO_NUM_BAD;
    if (isinf(v)) return TSIO_NUM_RANGE;
    *out = v;
    return TSIO_NUM_OK;
}

int tsio_is_missing_marker(const char *s, size_t n) {
    return n == 0 || same_ci(s, n, "nan") || same_ci(s, n, "na") || same_ci(s, n, "n/a");
}

void tsio_token_text(const char *s, size_t n, char *out, size_t out_size) {
    static const char hex[] = "0123456789abcdef";
    size_t i, k = 0, shown = n > 40 ? 40 : n;
    for (i = 0; i < shown && k + 5 < out_size; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f) {
            out[k++] = (char)c;
        } else {
            out[k++] = '\\';
            out[k++] = 'x';
            out[k++] = hex[c >> 4];
            out[k++] = hex[c & 15];
        }
    }
    if (i < n && k + 4 <= out_size) {
        memcpy(out + k, "...", 3);
        k += 3;
    }
    out[k] = '\0';
}

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
        if (same_ci(name, strlen(name), names[i].name)) {
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
    if (same_ci(dot, n, "csv")) return TSIO_DATA_CSV;
    if (same_ci(dot, n, "tsv")) return TSIO_DATA_TSV;
    if (same_ci(dot, n, "f32") || same_ci(dot, n, "raw")) return TSIO_DATA_RAW;
    return TSIO_DATA_AUTO;
}

static char *copy_string(const char *s) {
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    if (c) memcpy(c, s, n);
    return c;
}

/* ==== Reader core ===================================================================== */

static ts_status check_options(const tsio_data_options *o, ts_error *err) {
    if ((int)o->format < TSIO_DATA_AUTO || (int)o->format > TSIO_DATA_RAW)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "unknown data format %d", (int)o->format);
    if (o->csv_header < -1 || o->csv_header > 1)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "csv_header must be -1, 0 or 1, not %d", o->csv_header);
    if (o->csv_label_column < -1)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "csv_label_column must be >= -1, not %d", o->csv_label_column);
    return TS_OK;
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
        TS_TRY(tsio_src_fill(s, 3, err));
        if (s->end - s->start >= 2 && memcmp(s->buf + s->start, "\x1F\x8B", 2) == 0)
            return ts_fail(err, TS_ERR_PARSE, "%s: gzip-compressed data: decompress it first (zcat FILE | treescore ... -d -)",
                           r->name);
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

static ts_status open_query(tsio_reader *r, ts_error *err) {
    if (!r->opts.query_file) return TS_OK;
    r->query_name = copy_string(r->opts.query_file);
    if (!r->query_name) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory");
    TS_TRY(tsio_src_open(&r->qsrc, r->query_name, r->query_name, r->opts.max_line_bytes, err));
    r->has_query = 1;
    r->q_index = -1;
    return TS_OK;
}

static ts_status open_reader(tsio_reader *r, const char *path, ts_error *err) {
    TS_TRY(check_options(&r->opts, err));
    r->name = copy_string(strcmp(path, "-") == 0 ? "<stdin>" : path);
    if (!r->name) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory");
    TS_TRY(tsio_src_open(&r->src, path, r->name, r->opts.max_line_bytes, err));
    TS_TRY(resolve_format(r, path, err));
    switch (r->format) {
    case TSIO_DATA_SVMLIGHT: TS_TRY(tsio_svm_init(r, err)); break;
    case TSIO_DATA_CSV:
    case TSIO_DATA_TSV: TS_TRY(tsio_csv_init(r, err)); break;
    case TSIO_DATA_RAW: TS_TRY(tsio_raw_init(r, err)); break;
    default: return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "unknown data format");
    }
    TS_TRY(alloc_chunk(r, err));
    return open_query(r, err);
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
    r->label_col = SIZE_MAX;
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
    free(r->seen);
    free(r->fields);
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

/* ---- Query file ---------------------------------------------------------------------- */

/* The next group size from the query file; *got = 0 at its end. */
static ts_status query_next_size(tsio_reader *r, uint64_t *size, int *got, ts_error *err) {
    tsio_line ln;
    for (;;) {
        size_t i = 0, n;
        uint64_t v = 0;
        TS_TRY(tsio_src_next_line(&r->qsrc, &ln, got, err));
        if (!*got) return TS_OK;
        n = ln.len;
        while (n > 0 && (ln.p[n - 1] == ' ' || ln.p[n - 1] == '\t')) n--;
        while (i < n && (ln.p[i] == ' ' || ln.p[i] == '\t')) i++;
        if (i == n) continue;
        for (; i < n && is_digit(ln.p[i]) && v <= UINT64_MAX / 20; i++) v = v * 10 + (uint64_t)(ln.p[i] - '0');
        if (i != n || v == 0) {
            char tok[TSIO_TOKEN_TEXT_SIZE];
            tsio_token_text(ln.p, n, tok, sizeof tok);
            return ts_fail_at(err, TS_ERR_PARSE, ln.line_no, ln.byte,
                              "%s:%llu: query size '%s' is not a positive integer", r->query_name,
                              (unsigned long long)ln.line_no, tok);
        }
        *size = v;
        return TS_OK;
    }
}

ts_status tsio_row_query(tsio_reader *r, const tsio_line *ln, int64_t *qid, ts_error *err) {
    *qid = -1;
    if (!r->has_query) return TS_OK;
    while (r->q_left == 0) {
        uint64_t size;
        int got;
        TS_TRY(query_next_size(r, &size, &got, err));
        if (!got) {
            char where[64] = "";
            if (ln) snprintf(where, sizeof where, " is on line %llu", (unsigned long long)ln->line_no);
            return ts_fail_at(err, TS_ERR_PARSE, ln ? ln->line_no : 0, ln ? ln->byte : 0,
                              "%s: query sizes add up to %llu rows but %s has more (row %llu%s)", r->query_name,
                              (unsigned long long)r->q_sum, r->name, (unsigned long long)r->q_sum + 1, where);
        }
        r->q_left = size;
        r->q_sum += size;
        r->q_index++;
    }
    r->q_left--;
    *qid = r->q_index;
    return TS_OK;
}

/* At the end of input: the query sizes must add up to the rows read. */
static ts_status check_query_end(tsio_reader *r, ts_error *err) {
    uint64_t total, size;
    int got = 1;
    if (!r->has_query) return TS_OK;
    total = r->q_sum;
    while (got) {
        TS_TRY(query_next_size(r, &size, &got, err));
        if (got) total += size;
    }
    if (total != r->rows_total || r->q_left != 0)
        return ts_fail(err, TS_ERR_PARSE, "%s: query sizes add up to %llu rows but %s has %llu", r->query_name,
                       (unsigned long long)total, r->name, (unsigned long long)r->rows_total);
    return TS_OK;
}

/* ---- Comments and errors ------------------------------------------------------------- */

ts_status tsio_set_comment(tsio_reader *r, size_t row, const char *s, size_t n, ts_error *err) {
    if (r->arena_cap - r->arena_len < n + 1) {
        size_t cap = r->arena_cap ? r->arena_cap : 4096;
        char *na;
        while (cap - r->arena_len < n + 1) cap *= 2;
        na = realloc(r->arena, cap);
        if (!na) return ts_fail(err, TS_ERR_NO_MEMORY, "%s: out of memory for comments", r->name);
        r->arena = na;
        r->arena_cap = cap;
    }
    memcpy(r->arena + r->arena_len, s, n);
    r->arena[r->arena_len + n] = '\0';
    r->comment_off[row] = r->arena_len;
    r->arena_len += n + 1;
    return TS_OK;
}

ts_status tsio_fail_token(tsio_reader *r, const tsio_line *ln, const char *tok, size_t n, const char *what,
                          ts_error *err) {
    char text[TSIO_TOKEN_TEXT_SIZE];
    tsio_token_text(tok, n, text, sizeof text);
    return ts_fail_at(err, TS_ERR_PARSE, ln->line_no, ln->byte + (uint64_t)(tok - ln->p), "%s:%llu: %s '%s'", r->name,
                      (unsigned long long)ln->line_no, what, text);
}

/* ---- Chunks -------------------------------------------------------------------------- */

static ts_status fill_chunk(tsio_reader *r, size_t *rows, ts_error *err) {
    size_t i;
    r->arena_len = 0;
    r->chunk_first_line = 0;
    for (i = 0; i < r->chunk_rows; i++) r->comment_off[i] = SIZE_MAX;
    switch (r->format) {
    case TSIO_DATA_SVMLIGHT: return tsio_svm_fill(r, rows, err);
    case TSIO_DATA_CSV:
    case TSIO_DATA_TSV: return tsio_csv_fill(r, rows, err);
    case TSIO_DATA_RAW: return tsio_raw_fill(r, rows, err);
    default: return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "unknown data format");
    }
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
        st = check_query_end(r, e);
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
