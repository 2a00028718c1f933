/* test_data_readers.c: unit tests of the streaming data readers (SVMlight/LETOR, CSV/TSV, raw). */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <fcntl.h>
#include <locale.h>
#include <sys/wait.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "data/data.h"
#include "io/num.h"
#include "treescore.h"

#ifndef TS_TEST_DATA_DIR
#define TS_TEST_DATA_DIR "tests/data"
#endif

static char tmp_dir[256];

/* Write `n` bytes (or strlen when n == SIZE_MAX) to TMP/name; returns a static path. */
static const char *write_file_n(const char *name, const char *data, size_t n) {
    static char path[2][512];
    static int which = 0;
    char *p = path[which ^= 1];
    FILE *f;
    snprintf(p, 512, "%s/%s", tmp_dir, name);
    f = fopen(p, "wb");
    if (!f) {
        fprintf(stderr, "cannot write %s\n", p);
        exit(2);
    }
    if (n == SIZE_MAX) n = strlen(data);
    fwrite(data, 1, n, f);
    fclose(f);
    return p;
}

static const char *write_file(const char *name, const char *text) { return write_file_n(name, text, SIZE_MAX); }

/* Everything a reader produced, concatenated over chunks. */
typedef struct all_rows {
    size_t n_rows;
    uint32_t n_cols;
    float *x;
    double *labels;
    int64_t *qids;
    char **comments;
    size_t n_chunks;
    size_t chunk_sizes[64];
    uint64_t chunk_first_line[64];
    uint64_t chunk_first_row[64];
    tsio_data_format format;
    ts_error err;
} all_rows;

static void free_rows(all_rows *a) {
    size_t i;
    for (i = 0; i < a->n_rows; i++) free(a->comments[i]);
    free(a->x);
    free(a->labels);
    free(a->qids);
    free(a->comments);
    memset(a, 0, sizeof *a);
}

static char *dup_or_null(const char *s) {
    char *c;
    if (!s) return NULL;
    c = malloc(strlen(s) + 1);
    strcpy(c, s);
    return c;
}

static void append_chunk(all_rows *a, const tsio_chunk *c) {
    size_t n = a->n_rows + c->n_rows, i;
    a->x = realloc(a->x, (n * c->n_cols + 1) * sizeof(float));
    a->labels = realloc(a->labels, (n + 1) * sizeof(double));
    a->qids = realloc(a->qids, (n + 1) * sizeof(int64_t));
    a->comments = realloc(a->comments, (n + 1) * sizeof(char *));
    memcpy(a->x + a->n_rows * c->n_cols, c->x, c->n_rows * c->n_cols * sizeof(float));
    memcpy(a->labels + a->n_rows, c->labels, c->n_rows * sizeof(double));
    memcpy(a->qids + a->n_rows, c->qids, c->n_rows * sizeof(int64_t));
    for (i = 0; i < c->n_rows; i++) a->comments[a->n_rows + i] = dup_or_null(c->comments[i]);
    if (a->n_chunks < 64) {
        a->chunk_sizes[a->n_chunks] = c->n_rows;
        a->chunk_first_line[a->n_chunks] = c->first_line;
        a->chunk_first_row[a->n_chunks] = c->first_row;
    }
    a->n_chunks++;
    a->n_rows = n;
}

/* Open and read everything; returns the first failing status. */
static ts_status read_all(const char *path, const tsio_data_options *o, all_rows *a) {
    tsio_reader *r = NULL;
    tsio_chunk c;
    ts_status st;
    memset(a, 0, sizeof *a);
    st = tsio_reader_open(path, o, &r, &a->err);
    if (st != TS_OK) {
        CHECK(r == NULL);
        return st;
    }
    a->n_cols = tsio_reader_n_cols(r);
    a->format = tsio_reader_format(r);
    for (;;) {
        st = tsio_reader_next(r, &c, &a->err);
        if (st != TS_OK || c.n_rows == 0) break;
        CHECK(c.n_cols == a->n_cols);
        append_chunk(a, &c);
    }
    if (st != TS_OK) { /* errors are sticky */
        ts_error again;
        CHECK(tsio_reader_next(r, &c, &again) == st);
        CHECK(strcmp(again.message, a->err.message) == 0);
    }
    tsio_reader_close(r);
    return st;
}

static int same_float(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }
static int has(const ts_error *e, const char *s) { return strstr(e->message, s) != NULL; }

static tsio_data_options svm_opts(uint32_t n_cols) {
    tsio_data_options o;
    tsio_data_options_init(&o);
    o.format = TSIO_DATA_SVMLIGHT;
    o.n_cols = n_cols;
    return o;
}

/* ---- SVMlight ------------------------------------------------------------------------- */

static void test_svm_basic(void) {
    const char *p = write_file("basic.svm", "1 qid:3 1:0.5 4:nan 2:-2e-3 # docid = A  \n"
                                            "0 qid:3 4:1\t3:0.1\n"
                                            "-1.5 qid:7 0:42 #\n");
    tsio_data_options o = svm_opts(5);
    all_rows a;
    o.absent_value = 7.0f;
    CHECK_STATUS(read_all(p, &o, &a), TS_OK);
    CHECK(a.n_rows == 3 && a.n_cols == 5);
    CHECK(a.format == TSIO_DATA_SVMLIGHT);
    if (a.n_rows == 3) {
        CHECK(same_float(a.x[0], 7.0f) && same_float(a.x[1], 0.5f) && same_float(a.x[2], -2e-3f));
        CHECK(same_float(a.x[3], 7.0f) && isnan(a.x[4]));
        CHECK(same_float(a.x[5 + 3], 0.1f) && same_float(a.x[5 + 4], 1.0f) && same_float(a.x[5 + 0], 7.0f));
        CHECK(same_float(a.x[10], 42.0f));
        CHECK(a.labels[0] == 1.0 && a.labels[1] == 0.0 && a.labels[2] == -1.5);
        CHECK(a.qids[0] == 3 && a.qids[1] == 3 && a.qids[2] == 7);
        CHECK(a.comments[0] && strcmp(a.comments[0], "docid = A") == 0);
        CHECK(a.comments[1] == NULL);
        CHECK(a.comments[2] && strcmp(a.comments[2], "") == 0);
    }
    free_rows(&a);
}

static void test_svm_one_based(void) {
    const char *p = write_file("one.svm", "1 1:0.25 3:0.75\n");
    tsio_data_options o = svm_opts(3);
    all_rows a;
    o.one_based = 1;
    CHECK_STATUS(read_all(p, &o, &a), TS_OK);
    CHECK(a.n_rows == 1);
    if (a.n_rows == 1) CHECK(a.x[0] == 0.25f && a.x[1] == 0.0f && a.x[2] == 0.75f && a.qids[0] == -1);
    free_rows(&a);
    p = write_file("one0.svm", "1 1:0.25\n2 0:1\n");
    CHECK_STATUS(read_all(p, &o, &a), TS_ERR_PARSE);
    CHECK(a.err.line == 2 && has(&a.err, ":2: feature id 0 with one-based ids"));
    free_rows(&a);
    /* with one_based, id n_cols is past the end */
    p = write_file("one4.svm", "1 4:1\n");
    o.strict_cols = 1;
    CHECK_STATUS(read_all(p, &o, &a), TS_ERR_SHAPE);
    CHECK(has(&a.err, "feature id 4 is past the model's 3 features (1..3)"));
    free_rows(&a);
}

static void test_svm_crlf_blank_comments(void) {
    const char *p = write_file("crlf.svm", "# header comment\r\n"
                                           "\r\n"
                                           "2 qid:1 1:1.5 2:2.5 #c1\r\n"
                                           "   \t \r\n"
                                           "1 qid:1 2:3.5\r\n"
                                           "0 qid:2 1:4.5"); /* no final newline */
    tsio_data_options o = svm_opts(3);
    all_rows a;
    CHECK_STATUS(read_all(p, &o, &a), TS_OK);
    CHECK(a.n_rows == 3);
    if (a.n_rows == 3) {
        CHECK(a.x[1] == 1.5f && a.x[2] == 2.5f && a.x[3 + 2] == 3.5f && a.x[6 + 1] == 4.5f);
        CHECK(a.comments[0] && strcmp(a.comments[0], "c1") == 0);
        CHECK(a.qids[2] == 2);
        CHECK(a.chunk_first_line[0] == 3);
    }
    free_rows(&a);
    /* line numbers of errors count blank and comment lines */
    p = write_file("crlf_bad.svm", "# c\r\n\r\n1 1:1\r\n1 1:x\r\n");
    CHECK_STATUS(read_all(p, &o, &a), TS_ERR_PARSE);
    CHECK(a.err.line == 4);
    CHECK_MSG(has(&a.err, "crlf_bad.svm:4: bad feature value in '1:x'"), "%s", a.err.message);
    CHECK(a.err.byte == 5 + 2 + 7 + 2);
    free_rows(&a);
}

/* 10 rows, chunk_rows 3, with blank and comment lines in between. */
static void test_svm_chunks(void) {
    char text[1024];
    size_t k = 0;
    int i;
    tsio_data_options o = svm_opts(2);
    all_rows a;
    const char *p;
    for (i = 0; i < 10; i++) {
        if (i % 4 == 1) k += (size_t)snprintf(text + k, sizeof text - k, "# skip\n\n");
        k += (size_t)snprintf(text + k, sizeof text - k, "%d 1:%d # row %d\n", i, i * 10, i);
    }
    p = write_file("chunks.svm", text);
    o.chunk_rows = 3;
    CHECK_STATUS(read_all(p, &o, &a), TS_OK);
    CHECK(a.n_rows == 10 && a.n_chunks == 4);
    if (a.n_rows == 10 && a.n_chunks == 4) {
        CHECK(a.chunk_sizes[0] == 3 && a.chunk_sizes[1] == 3 && a.chunk_sizes[2] == 3 && a.chunk_sizes[3] == 1);
        CHECK(a.chunk_first_row[0] == 0 && a.chunk_first_row[1] == 3 && a.chunk_first_row[2] == 6 &&
              a.chunk_first_row[3] == 9);
        /* lines: 1 r0, 2-3 skip, 4 r1, 5 r2, 6 r3, 7-8 skip, 9 r4, 10 r5, 11 r6, 12 r7, 13-14 skip, 15 r8, 16 r9 */
        CHECK_MSG(a.chunk_first_line[0] == 1 && a.chunk_first_line[1] == 6 && a.chunk_first_line[2] == 11 &&
                      a.chunk_first_line[3] == 16,
                  "%llu %llu %llu %llu", (unsigned long long)a.chunk_first_line[0],
                  (unsigned long long)a.chunk_first_line[1], (unsigned long long)a.chunk_first_line[2],
                  (unsigned long long)a.chunk_first_line[3]);
        for (i = 0; i < 10; i++) {
            char want[16];
            snprintf(want, sizeof want, "row %d", i);
            CHECK(a.labels[i] == i && a.x[i * 2 + 1] == (float)(i * 10));
            CHECK(a.comments[i] && strcmp(a.comments[i], want) == 0);
        }
    }
    free_rows(&a);
}

static void test_svm_query_file(void) {
    const char *data = write_file("q.svm", "1 1:1\n0 1:2\n1 1:3\n0 1:4\n2 1:5\n");
    const char *qf = write_file("q.svm.query", "2\n\n3\n");
    char qpath[512], dpath[512];
    tsio_data_options o = svm_opts(2);
    all_rows a;
    snprintf(qpath, sizeof qpath, "%s", qf);
    snprintf(dpath, sizeof dpath, "%s", data);
    o.query_file = qpath;
    o.chunk_rows = 2;
    CHECK_STATUS(read_all(dpath, &o, &a), TS_OK);
    CHECK(a.n_rows == 5);
    if (a.n_rows == 5) CHECK(a.qids[0] == 0 && a.qids[1] == 0 && a.qids[2] == 1 && a.qids[3] == 1 && a.qids[4] == 1);
    free_rows(&a);

    write_file("q.svm.query", "2\n4\n");
    CHECK_STATUS(read_all(dpath, &o, &a), TS_ERR_PARSE);
    CHECK_MSG(has(&a.err, "q.svm.query: query sizes add up to 6 rows but ") && has(&a.err, "q.svm has 5"), "%s",
              a.err.message);
    free_rows(&a);

    write_file("q.svm.query", "2\n3\n1\n");
    CHECK_STATUS(read_all(dpath, &o, &a), TS_ERR_PARSE);
    CHECK_MSG(has(&a.err, "add up to 6 rows but") && has(&a.err, "has 5"), "%s", a.err.message);
    free_rows(&a);

    write_file("q.svm.query", "2\n2\n");
    CHECK_STATUS(read_all(dpath, &o, &a), TS_ERR_PARSE);
    CHECK_MSG(has(&a.err, "add up to 4 rows but") && a.err.line == 5, "%s", a.err.message);
    free_rows(&a);

    write_file("q.svm.query", "2\n0\n3\n");
    CHECK_STATUS(read_all(dpath, &o, &a), TS_ERR_PARSE);
    CHECK_MSG(has(&a.err, "q.svm.query:2: query size '0' is not a positive integer"), "%s", a.err.message);
    free_rows(&a);

    write_file("q.svm.query", "2\nthree\n");
    CHECK_STATUS(read_all(dpath, &o, &a), TS_ERR_PARSE);
    CHECK(has(&a.err, "query size 'three'"));
    free_rows(&a);

    write_file("q.svm.query", "5\n");
    write_file("q.svm", "1 qid:4 1:1\n");
    CHECK_STATUS(read_all(dpath, &o, &a), TS_ERR_PARSE);
    CHECK_MSG(has(&a.err, "q.svm:1: qid given in the line and by a query file"), "%s", a.err.message);
    free_rows(&a);

    o.query_file = "/nonexistent/dir/x.query";
    CHECK_STATUS(read_all(dpath, &o, &a), TS_ERR_IO);
    CHECK(has(&a.err, "/nonexistent/dir/x.query"));
    free_rows(&a);
}

static void test_svm_ids(void) {
    const char *p = write_file("ids.svm", "1 3:0.5 1:0.25 200:9\n");
    tsio_data_options o = svm_opts(137);
    all_rows a;
    CHECK_STATUS(read_all(p, &o, &a), TS_OK); /* unsorted ids; 200 ignored */
    CHECK(a.n_rows == 1);
    if (a.n_rows == 1) CHECK(a.x[1] == 0.25f && a.x[3] == 0.5f);
    free_rows(&a);
    o.strict_cols = 1;
    CHECK_STATUS(read_all(p, &o, &a), TS_ERR_SHAPE);
    CHECK_MSG(has(&a.err, "ids.svm:1: feature id 200 is past the model's 137 features (0..136)"), "%s", a.err.message);
    CHECK(a.err.line == 1);
    free_rows(&a);
    p = write_file("dup.svm", "1 3:0.5\n1 3:0.5 1:2 3:0.5\n");
    CHECK_STATUS(read_all(p, &o, &a), TS_ERR_PARSE);
    CHECK_MSG(has(&a.err, "dup.svm:2: duplicate feature id 3"), "%s", a.err.message);
    free_rows(&a);
    /* an absent id on one row is not carried to the next */
    p = write_file("nodup.svm", "1 3:0.5\n1 3:0.5\n");
    CHECK_STATUS(read_all(p, &o, &a), TS_OK);
    free_rows(&a);
    p = write_file("huge.svm", "1 99999999999999999999999:1\n");
    CHECK_STATUS(read_all(p, &o, &a), TS_ERR_LIMIT); /* no model has it: the limit is named */
    CHECK_MSG(has(&a.err, "feature id 99999999999999999999999 is above the limit 16777215"), "%s", a.err.message);
    free_rows(&a);
    p = write_file("id4g.svm", "1 4000000000:1\n");
    CHECK_STATUS(read_all(p, &o, &a), TS_ERR_LIMIT);
    CHECK_MSG(has(&a.err, "feature id 4000000000 is above the limit 16777215"), "%s", a.err.message);
    free_rows(&a);
    o.strict_cols = 0;
    CHECK_STATUS(read_all(p, &o, &a), TS_OK);
    free_rows(&a);
}

static void expect_svm_error(const char *text, ts_status want, const char *msg_part, unsigned long long line) {
    const char *p = write_file("bad.svm", text);
    tsio_data_options o = svm_opts(10);
    all_rows a;
    o.strict_cols = 1;
    CHECK_STATUS(read_all(p, &o, &a), want);
    CHECK_MSG(has(&a.err, msg_part), "want '%s' in '%s'", msg_part, a.err.message);
    CHECK_MSG(a.err.line == line, "line %llu, want %llu (%s)", a.err.line, line, a.err.message);
    free_rows(&a);
}

static void test_svm_errors(void) {
    expect_svm_error("1 1:1\nabc 1:1\n", TS_ERR_PARSE, "bad.svm:2: bad label 'abc'", 2);
    expect_svm_error("1 1:1 2\n", TS_ERR_PARSE, "expected ID:VALUE, got '2'", 1);
    expect_svm_error("1 1:\n", TS_ERR_PARSE, "bad feature value in '1:'", 1);
    expect_svm_error("1 :3\n", TS_ERR_PARSE, "expected ID:VALUE, got ':3'", 1);
    expect_svm_error("1 -1:3\n", TS_ERR_PARSE, "expected ID:VALUE, got '-1:3'", 1);
    expect_svm_error("1 1:2:3\n", TS_ERR_PARSE, "bad feature value in '1:2:3'", 1);
    expect_svm_error("1 1:0x10\n", TS_ERR_PARSE, "bad feature value", 1);
    expect_svm_error("1 1:1e40\n", TS_ERR_PARSE, "value out of float range in '1:1e40'", 1);
    expect_svm_error("1 1:-1e39\n", TS_ERR_PARSE, "out of float range", 1);
    expect_svm_error("1e999 1:1\n", TS_ERR_PARSE, "label out of range", 1);
    expect_svm_error("1 qid:x 1:1\n", TS_ERR_PARSE, "bad qid", 1);
    expect_svm_error("1 qid:-3 1:1\n", TS_ERR_PARSE, "bad qid", 1);
    expect_svm_error("1 qid:1 qid:2 1:1\n", TS_ERR_PARSE, "second qid", 1);
    expect_svm_error("1 1:1\n\n2 1:1\x01\n", TS_ERR_PARSE, ":3: bad feature value in '1:1\\x01'", 3);
    expect_svm_error("1 1:1.000000000000000000000000000000000000000000000000000000000000000000000x\n", TS_ERR_PARSE,
                     "'1:1.000000000000000000000000000000000000...'", 1);
    {
        static const char nul[] = "1 1:1\n1 1:\0 2:3\n";
        const char *p = write_file_n("nul.svm", nul, sizeof nul - 1);
        tsio_data_options o = svm_opts(10);
        all_rows a;
        CHECK_STATUS(read_all(p, &o, &a), TS_ERR_PARSE);
        CHECK_MSG(has(&a.err, "nul.svm:2: NUL byte") && a.err.line == 2, "%s", a.err.message);
        free_rows(&a);
    }
    {
        tsio_data_options o = svm_opts(0);
        all_rows a;
        CHECK_STATUS(read_all(write_file("x.svm", "1 1:1\n"), &o, &a), TS_ERR_INVALID_ARGUMENT);
        free_rows(&a);
    }
}

/* Exact values: the float nearest the text, inf/nan spellings, denormals. */
static void test_svm_values(void) {
    const char *p = write_file("vals.svm", "1 0:0.1 1:-0 2:1e-45 3:3.4028235e38 4:NaN 5:-inf 6:.5 7:5. 8:+2.5E+1 "
                                           "9:0.30000001192092896\n");
    tsio_data_options o = svm_opts(10);
    all_rows a;
    CHECK_STATUS(read_all(p, &o, &a), TS_OK);
    if (a.n_rows == 1) {
        CHECK(same_float(a.x[0], 0.1f) && same_float(a.x[1], -0.0f) && a.x[2] > 0.0f);
        CHECK(same_float(a.x[2], strtof("1e-45", NULL)) && same_float(a.x[3], 3.4028235e38f));
        CHECK(isnan(a.x[4]) && isinf(a.x[5]) && a.x[5] < 0);
        CHECK(a.x[6] == 0.5f && a.x[7] == 5.0f && a.x[8] == 25.0f && same_float(a.x[9], 0.3f));
    }
    free_rows(&a);
}

/* tsio_parse_f32/f64 agree bit for bit with strtof/strtod on many decimal spellings. */
static void test_number_exactness(void) {
    uint64_t state = 88172645463325252ull;
    int i, bad_f = 0, bad_d = 0;
    char buf[128];
    for (i = 0; i < 200000; i++) {
        float f, g;
        double d, e;
        int kind, len;
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        kind = (int)(state % 6);
        if (kind == 0) {
            uint32_t bits = (uint32_t)(state >> 20);
            float v;
            memcpy(&v, &bits, 4);
            if (!isfinite(v)) continue;
            len = snprintf(buf, sizeof buf, "%.*g", (int)(state >> 60) % 10 + 1, v);
        } else if (kind == 1) {
            len = snprintf(buf, sizeof buf, "0.%06u", (unsigned)((state >> 16) % 1000000));
        } else if (kind == 2) {
            len = snprintf(buf, sizeof buf, "%u.%u", (unsigned)((state >> 8) % 100000),
                           (unsigned)((state >> 32) % 100000000));
        } else if (kind == 3) {
            len = snprintf(buf, sizeof buf, "%llue%d", (unsigned long long)((state >> 20) % 100000000ull),
                           (int)((state >> 50) % 60) - 40);
        } else if (kind == 4) {
            len = snprintf(buf, sizeof buf, "-%.17g", (double)(state >> 11) * 0x1.0p-53 * 1000.0);
        } else {
            len = snprintf(buf, sizeof buf, "%.20f", (double)(state >> 11) * 0x1.0p-53);
        }
        if (tsio_parse_f32(buf, (size_t)len, &f) != TSIO_NUM_OK) {
            bad_f++;
            continue;
        }
        g = strtof(buf, NULL);
        if (!same_float(f, g) && bad_f++ < 5) fprintf(stderr, "f32 mismatch on %s\n", buf);
        if (tsio_parse_f64(buf, (size_t)len, &d) != TSIO_NUM_OK) {
            bad_d++;
            continue;
        }
        e = strtod(buf, NULL);
        if (memcmp(&d, &e, sizeof d) != 0 && bad_d++ < 5) fprintf(stderr, "f64 mismatch on %s\n", buf);
    }
    CHECK(bad_f == 0 && bad_d == 0);
    /* the halfway cases a double-then-float conversion would get wrong */
    {
        char t[] = "1.00000005960464477539062500000000000001";
        float v;
        CHECK(tsio_parse_f32(t, strlen(t), &v) == TSIO_NUM_OK && same_float(v, strtof(t, NULL)));
        CHECK(tsio_parse_f32(t, 3, &v) == TSIO_NUM_OK && v == 1.0f); /* "1.0", no read past n */
    }
}

/* A locale whose decimal separator is ',' (strtod there stops at "1.5"'s '.'), or 0. */
static locale_t comma_locale(void) {
    static const char *names[] = {"de_DE.UTF-8", "de_DE.utf8", "de_DE", "fr_FR.UTF-8", "fr_FR.utf8", "fr_FR"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        locale_t l = newlocale(LC_NUMERIC_MASK, names[i], (locale_t)0);
        if (!l) continue;
        locale_t prev = uselocale(l);
        int comma = strtod("1.5", NULL) != 1.5;
        uselocale(prev);
        if (comma) return l;
        freelocale(l);
    }
    return (locale_t)0;
}

/* The checks of test_number_locale, under the ',' locale l. */
static void number_locale_checks(locale_t l) {
    /* 25 significant digits: past the fast path, so strtod itself runs */
    char slow[] = "0.1000000000000000000000001", one[] = "1.5";
    double want_slow = strtod(slow, NULL), d = 0;
    float want_slow_f = strtof(slow, NULL), f = 0;
    tsio_data_options o = svm_opts(2);
    all_rows a;
    locale_t prev = uselocale(l);
    CHECK(tsio_parse_f32(one, 3, &f) == TSIO_NUM_OK && f == 1.5f);
    CHECK(tsio_parse_f64(one, 3, &d) == TSIO_NUM_OK && d == 1.5);
    CHECK(tsio_parse_f32(slow, strlen(slow), &f) == TSIO_NUM_OK && same_float(f, want_slow_f));
    CHECK(tsio_parse_f64(slow, strlen(slow), &d) == TSIO_NUM_OK && d == want_slow);
    CHECK(tsio_parse_double(slow, strlen(slow), &d) == 0 && d == want_slow);
    CHECK(tsio_parse_float(slow, strlen(slow), &f) == 0 && same_float(f, want_slow_f));
    CHECK(tsio_parse_double("1,5", 3, &d) != 0);
    CHECK_STATUS(read_all(write_file("loc.svm", "1.5 0:1.5 1:0.1000000000000000000000001\n"), &o, &a), TS_OK);
    CHECK(a.n_rows == 1 && a.labels[0] == 1.5 && a.x[0] == 1.5f && same_float(a.x[1], want_slow_f));
    free_rows(&a);
    o.format = TSIO_DATA_CSV;
    CHECK_STATUS(read_all(write_file("loc.csv", "1.5,0.1000000000000000000000001\n"), &o, &a), TS_OK);
    CHECK(a.n_rows == 1 && a.x[0] == 1.5f && same_float(a.x[1], want_slow_f));
    free_rows(&a);
    uselocale(prev);
}

/* Numbers, data files and model-loader tokens parse the same under a ',' locale. Run in
 * a child process that ends with _exit: glibc's newlocale leaks a few bytes for a locale
 * loaded from disk, which LeakSanitizer would report at exit. */
static void test_number_locale(void) {
    pid_t pid;
    int status = 0;
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        int before = check_failed_;
        locale_t l = comma_locale();
        if (!l) _exit(77);
        number_locale_checks(l);
        _exit(check_failed_ != before ? 1 : 0);
    }
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
        printf("  (skipped: no de_DE/fr_FR locale installed)\n");
    else
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A 10 MB line must fail fast with TS_ERR_LIMIT, without a 10 MB buffer. */
static void test_long_line(void) {
    size_t n = 10u << 20, i;
    char *big = malloc(n + 32);
    const char *p;
    tsio_data_options o = svm_opts(10);
    all_rows a;
    clock_t t0;
    memcpy(big, "1 1:1\n1", 7);
    for (i = 7; i + 4 < n; i += 4) memcpy(big + i, " 1:1", 4);
    for (; i < n; i++) big[i] = ' ';
    big[n - 1] = '\n';
    p = write_file_n("long.svm", big, n);
    t0 = clock();
    CHECK_STATUS(read_all(p, &o, &a), TS_ERR_LIMIT);
    CHECK_MSG(has(&a.err, "long.svm:2: line longer than 1048576 bytes") && a.err.line == 2, "%s", a.err.message);
    CHECK((double)(clock() - t0) / CLOCKS_PER_SEC < 2.0);
    free_rows(&a);
    /* no newline at all */
    p = write_file_n("long2.svm", big + 6, n - 7);
    CHECK_STATUS(read_all(p, &o, &a), TS_ERR_LIMIT);
    free_rows(&a);
    /* a small limit; a line of exactly the limit (plus CRLF) passes */
    o.max_line_bytes = 11;
    p = write_file("lim.svm", "1 1:1 2:2.5\r\n1 1:1 2:2.55\n");
    CHECK_STATUS(read_all(p, &o, &a), TS_ERR_LIMIT);
    CHECK_MSG(has(&a.err, "lim.svm:2: line longer than 11 bytes"), "%s", a.err.message);
    CHECK(a.n_rows == 0 || a.n_rows == 1);
    free_rows(&a);
    /* lines longer than the 1 MiB read block but within a raised limit */
    o.max_line_bytes = 4u << 20;
    memcpy(big + (3u << 20), "\n1", 2);
    p = write_file_n("long3.svm", big, (3u << 20) + 2);
    CHECK_STATUS(read_all(p, &o, &a), TS_ERR_PARSE); /* duplicate ids, but it got through the line */
    CHECK_MSG(has(&a.err, "long3.svm:2: duplicate feature id 1"), "%s", a.err.message);
    free_rows(&a);
    free(big);
}

static void test_garbage(void) {
    unsigned char junk[4096];
    uint32_t s = 12345;
    size_t i;
    tsio_data_options o = svm_opts(10);
    all_rows a;
    const char *p;
    for (i = 0; i < sizeof junk; i++) {
        s = s * 1103515245u + 12345u;
        junk[i] = (unsigned char)(s >> 16);
    }
    p = write_file_n("junk.bin", (const char *)junk, sizeof junk);
    CHECK_STATUS(read_all(p, &o, &a), TS_ERR_PARSE);
    CHECK_MSG(a.err.line >= 1 && has(&a.err, "junk.bin:"), "%s", a.err.message);
    free_rows(&a);
    o.format = TSIO_DATA_CSV;
    o.n_cols = 0;
    CHECK(read_all(p, &o, &a) != TS_OK);
    CHECK(has(&a.err, "junk.bin"));
    free_rows(&a);
    o.format = TSIO_DATA_RAW;
    CHECK_STATUS(read_all(p, &o, &a), TS_ERR_PARSE);
    CHECK(has(&a.err, "not a raw float32 matrix"));
    free_rows(&a);
    /* a PNG-like header */
    p = write_file_n("img.png", "\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16);
    o = svm_opts(10);
    CHECK_STATUS(read_all(p, &o, &a), TS_ERR_PARSE);
    CHECK_MSG(has(&a.err, "img.png:1: bad label '\\x89PNG'"), "%s", a.err.message);
    free_rows(&a);
}

static void test_open_errors(void) {
    tsio_data_options o = svm_opts(10);
    all_rows a;
    tsio_reader *r = (tsio_reader *)&a;
    CHECK_STATUS(read_all("/nonexistent/file.svm", &o, &a), TS_ERR_IO);
    CHECK(has(&a.err, "/nonexistent/file.svm") && has(&a.err, "No such file"));
    free_rows(&a);
    CHECK_STATUS(read_all(tmp_dir, &o, &a), TS_ERR_IO);
    free_rows(&a);
    CHECK_STATUS(tsio_reader_open(NULL, &o, &r, NULL), TS_ERR_INVALID_ARGUMENT);
    CHECK(r == NULL);
    CHECK_STATUS(tsio_reader_open("x", &o, NULL, NULL), TS_ERR_INVALID_ARGUMENT);
    o.csv_header = 3;
    CHECK_STATUS(read_all(write_file("o.svm", "1 1:1\n"), &o, &a), TS_ERR_INVALID_ARGUMENT);
    free_rows(&a);
    tsio_reader_close(NULL);
    CHECK(tsio_reader_n_cols(NULL) == 0);
}

static void test_empty_inputs(void) {
    tsio_data_options o = svm_opts(4);
    all_rows a;
    CHECK_STATUS(read_all(write_file("empty.svm", ""), &o, &a), TS_OK);
    CHECK(a.n_rows == 0 && a.n_cols == 4);
    free_rows(&a);
    CHECK_STATUS(read_all(write_file("comments.svm", "# a\n\n# b\n"), &o, &a), TS_OK);
    CHECK(a.n_rows == 0);
    free_rows(&a);
    tsio_data_options_init(&o);
    CHECK_STATUS(read_all(write_file("empty.csv", ""), &o, &a), TS_OK);
    CHECK(a.n_rows == 0 && a.format == TSIO_DATA_CSV);
    free_rows(&a);
    CHECK_STATUS(read_all(write_file("empty.f32", ""), &o, &a), TS_ERR_PARSE);
    CHECK(has(&a.err, "empty.f32: not a raw float32 matrix"));
    free_rows(&a);
}

/* ---- CSV / TSV ------------------------------------------------------------------------ */

static void test_csv_basic(void) {
    const char *p = write_file("a.csv", "label,f0,\"f,1\",f2\r\n"
                                        "1, 0.5 ,\"1.5\",nan\r\n"
                                        "\r\n"
                                        "0,,NA,N/A\r\n"
                                        "2,NaN, -3 ,1e-2\r\n");
    tsio_data_options o;
    all_rows a;
    tsio_data_options_init(&o);
    o.csv_label_column = 0;
    CHECK_STATUS(read_all(p, &o, &a), TS_OK);
    CHECK(a.format == TSIO_DATA_CSV && a.n_cols == 3 && a.n_rows == 3);
    if (a.n_rows == 3) {
        CHECK(a.labels[0] == 1 && a.labels[1] == 0 && a.labels[2] == 2);
        CHECK(a.x[0] == 0.5f && a.x[1] == 1.5f && isnan(a.x[2]));
        CHECK(isnan(a.x[3]) && isnan(a.x[4]) && isnan(a.x[5]));
        CHECK(isnan(a.x[6]) && a.x[7] == -3.0f && same_float(a.x[8], 1e-2f));
        CHECK(a.qids[0] == -1 && a.comments[0] == NULL);
        CHECK(a.chunk_first_line[0] == 2);
    }
    free_rows(&a);
    /* no label column: labels NaN; no header detected */
    tsio_data_options_init(&o);
    p = write_file("b.csv", "1,2\n3,4\n");
    CHECK_STATUS(read_all(p, &o, &a), TS_OK);
    CHECK(a.n_rows == 2 && a.n_cols == 2);
    if (a.n_rows == 2) CHECK(isnan(a.labels[0]) && a.x[0] == 1 && a.x[3] == 4 && a.chunk_first_line[0] == 1);
    free_rows(&a);
    /* header forced on a numeric first line */
    o.csv_header = 1;
    CHECK_STATUS(read_all(p, &o, &a), TS_OK);
    CHECK(a.n_rows == 1 && a.x[0] == 3);
    free_rows(&a);
    /* header forced off on a text first line: an error naming the token */
    o.csv_header = 0;
    CHECK_STATUS(read_all(write_file("c.csv", "a,b\n1,2\n"), &o, &a), TS_ERR_PARSE);
    CHECK_MSG(has(&a.err, "c.csv:1: bad value 'a'"), "%s", a.err.message);
    free_rows(&a);
    /* header only: zero rows, columns from the header */
    o.csv_header = -1;
    CHECK_STATUS(read_all(write_file("h.csv", "a,b,c\n"), &o, &a), TS_OK);
    CHECK(a.n_rows == 0 && a.n_cols == 3);
    free_rows(&a);
}

static void test_csv_errors(void) {
    tsio_data_options o;
    all_rows a;
    char text[4096];
    size_t k = 0;
    int i, j;
    tsio_data_options_init(&o);
    for (i = 0; i < 3; i++) {
        for (j = 0; j < (i == 2 ? 45 : 46); j++) k += (size_t)snprintf(text + k, sizeof text - k, j ? ",%d" : "%d", j);
        text[k++] = '\n';
    }
    text[k] = '\0';
    CHECK_STATUS(read_all(write_file("fields.csv", text), &o, &a), TS_ERR_PARSE);
    CHECK_MSG(has(&a.err, "fields.csv:3: 45 fields, expected 46") && a.err.line == 3, "%s", a.err.message);
    free_rows(&a);
    o.n_cols = 137;
    CHECK_STATUS(read_all(write_file("n.csv", "1,2,3\n"), &o, &a), TS_ERR_SHAPE);
    CHECK_MSG(has(&a.err, "3 feature columns, expected 137"), "%s", a.err.message);
    free_rows(&a);
    o.n_cols = 2;
    o.csv_label_column = 2;
    CHECK_STATUS(read_all(write_file("n2.csv", "1,2,3\n4,5,x\n"), &o, &a), TS_ERR_PARSE);
    CHECK_MSG(has(&a.err, "n2.csv:2: bad label 'x'"), "%s", a.err.message);
    free_rows(&a);
    o.csv_label_column = 5;
    CHECK_STATUS(read_all(write_file("n3.csv", "1,2,3\n"), &o, &a), TS_ERR_INVALID_ARGUMENT);
    free_rows(&a);
    tsio_data_options_init(&o);
    CHECK_STATUS(read_all(write_file("q.csv", "1,\"2\n"), &o, &a), TS_ERR_PARSE);
    CHECK(has(&a.err, "unterminated quoted field"));
    free_rows(&a);
    CHECK_STATUS(read_all(write_file("q2.csv", "1,\"2\"x,3\n"), &o, &a), TS_ERR_PARSE);
    CHECK(has(&a.err, "text after a quoted field"));
    free_rows(&a);
    CHECK_STATUS(read_all(write_file("r.csv", "1,2\n1e40,2\n"), &o, &a), TS_ERR_PARSE);
    CHECK(has(&a.err, "r.csv:2: value out of float range '1e40'"));
    free_rows(&a);
}

/* text_value of the text-column tests: the value is the text's index in a list of the
 * texts seen (so every text must come back exactly); "FAIL" fails. */
typedef struct text_seen {
    char texts[16][64];
    int n;
} text_seen;

static ts_status seen_value(void *ctx, uint32_t column, const char *text, size_t len, double *value, ts_error *err) {
    text_seen *t = ctx;
    if (len == 4 && memcmp(text, "FAIL", 4) == 0) {
        err->status = TS_ERR_INVALID_ARGUMENT;
        snprintf(err->message, sizeof err->message, "no such category (column %u)", column);
        return TS_ERR_INVALID_ARGUMENT;
    }
    for (int i = 0; i < t->n; i++)
        if (strlen(t->texts[i]) == len && memcmp(t->texts[i], text, len) == 0) return *value = i, TS_OK;
    if (t->n == 16 || len >= 64) return TS_ERR_LIMIT;
    memcpy(t->texts[t->n], text, len);
    t->texts[t->n][len] = '\0';
    *value = t->n++;
    return TS_OK;
}

static void test_csv_text_columns(void) {
    static const unsigned char text_cols[] = {0, 1, 0, 1};
    tsio_data_options o;
    all_rows a;
    text_seen t = {{{0}}, 0};
    tsio_data_options_init(&o);
    o.text_columns = text_cols;
    o.n_text_columns = 4;
    o.text_value = seen_value;
    o.text_ctx = &t;
    o.csv_label_column = 1;
    /* no header (the first line's text sits in text columns); label column 1 shifts the
     * features: feature columns 1 and 3 are fields 2 and 4 */
    const char *p = write_file("t.csv", "0.5,1, red ,2,3\n"
                                        "nan,0,\"a, \"\"b\"\"\",NA, \" x \"\n"
                                        "1,1,,4,\n");
    CHECK_STATUS(read_all(p, &o, &a), TS_OK);
    CHECK(a.n_rows == 3 && a.n_cols == 4);
    if (a.n_rows == 3) {
        CHECK(a.x[0] == 0.5f && a.x[1] == 0 && a.x[2] == 2 && a.x[3] == 1);
        CHECK(isnan(a.x[4]) && a.x[5] == 2 && isnan(a.x[6]) && a.x[7] == 3);
        CHECK(a.x[8] == 1 && a.x[9] == 4 && a.x[10] == 4 && a.x[11] == 4);
        CHECK(a.labels[0] == 1 && a.labels[1] == 0);
    }
    CHECK_MSG(t.n == 5 && !strcmp(t.texts[0], "red") && !strcmp(t.texts[1], "3") && !strcmp(t.texts[2], "a, \"b\"") &&
                  !strcmp(t.texts[3], " x ") && !strcmp(t.texts[4], ""),
              "%d texts: '%s' '%s' '%s' '%s'", t.n, t.texts[0], t.texts[1], t.texts[2], t.texts[3]);
    free_rows(&a);
    /* doubles too; a header is detected from the number columns */
    t.n = 0;
    o.double_values = 1;
    {
        tsio_reader *r = NULL;
        tsio_chunk c;
        CHECK_STATUS(tsio_reader_open(write_file("t2.csv", "f0,y,city,f2,tag\n0.25,1,red,2,3\n"), &o, &r, &a.err), TS_OK);
        CHECK_STATUS(tsio_reader_next(r, &c, &a.err), TS_OK);
        CHECK(c.n_rows == 1 && c.xd && c.xd[0] == 0.25 && c.xd[1] == 0 && c.xd[2] == 2 && c.xd[3] == 1);
        CHECK(!strcmp(tsio_reader_column_name(r, 1), "city"));
        tsio_reader_close(r);
    }
    o.double_values = 0;
    /* the callback's failure and a bad number name the file, line and column */
    CHECK_STATUS(read_all(write_file("t3.csv", "f0,y,city,f2,tag\n0.25,1,red,2,3\n1,1,FAIL,2,3\n"), &o, &a),
                 TS_ERR_INVALID_ARGUMENT);
    CHECK_MSG(has(&a.err, "t3.csv:3: column 1 ('city'): no such category (column 1)") && a.err.line == 3, "%s",
              a.err.message);
    free_rows(&a);
    CHECK_STATUS(read_all(write_file("t4.csv", "0.25,1,red,2,3\n1,1,red,zz,3\n"), &o, &a), TS_ERR_PARSE);
    CHECK_MSG(has(&a.err, "t4.csv:2: bad value 'zz' in column 2"), "%s", a.err.message);
    free_rows(&a);
    /* every column text: a first line of the expected names is a header, another is a row */
    {
        static const unsigned char all_text[] = {1, 1};
        static const char *const names[] = {"city", "tag"};
        tsio_data_options o2;
        tsio_data_options_init(&o2);
        o2.text_columns = all_text;
        o2.n_text_columns = 2;
        o2.text_value = seen_value;
        o2.text_ctx = &t;
        o2.header_names = names;
        o2.n_header_names = 2;
        CHECK_STATUS(read_all(write_file("t6.csv", "city,tag\nOslo,red\n"), &o2, &a), TS_OK);
        CHECK(a.n_rows == 1 && a.chunk_first_line[0] == 2);
        free_rows(&a);
        CHECK_STATUS(read_all(write_file("t7.csv", "city,red\nOslo,red\n"), &o2, &a), TS_OK);
        CHECK(a.n_rows == 2);
        free_rows(&a);
        o2.header_names = NULL;
        CHECK_STATUS(read_all(write_file("t8.csv", "city,tag\nOslo,red\n"), &o2, &a), TS_OK);
        CHECK(a.n_rows == 2);
        free_rows(&a);
    }
    /* text columns need the function */
    o.text_value = NULL;
    CHECK_STATUS(read_all(write_file("t5.csv", "1,2,3,4,5\n"), &o, &a), TS_ERR_INVALID_ARGUMENT);
    free_rows(&a);
}

static void test_tsv(void) {
    tsio_data_options o;
    all_rows a;
    tsio_data_options_init(&o);
    CHECK_STATUS(read_all(write_file("a.tsv", "x\ty\tz\n1\t 2 \t\n\t\t\n4\tnan\t6\n"), &o, &a), TS_OK);
    CHECK(a.format == TSIO_DATA_TSV && a.n_cols == 3 && a.n_rows == 3);
    if (a.n_rows == 3) {
        CHECK(a.x[0] == 1 && a.x[1] == 2 && isnan(a.x[2]));
        CHECK(isnan(a.x[3]) && isnan(a.x[4]) && isnan(a.x[5])); /* a line of tabs is a row of missing values */
        CHECK(a.x[6] == 4 && isnan(a.x[7]) && a.x[8] == 6);
    }
    free_rows(&a);
    /* explicit format beats the extension; chunking across boundaries */
    o.format = TSIO_DATA_TSV;
    o.chunk_rows = 3;
    CHECK_STATUS(read_all(write_file("t.txt", "1\t2\n2\t3\n3\t4\n4\t5\n5\t6\n6\t7\n7\t8\n8\t9\n9\t10\n10\t11\n"), &o,
                          &a),
                 TS_OK);
    CHECK(a.n_rows == 10 && a.n_chunks == 4);
    if (a.n_rows == 10) CHECK(a.x[18] == 10 && a.x[19] == 11 && a.chunk_first_line[3] == 10 && a.chunk_first_row[3] == 9);
    free_rows(&a);
}

/* ---- raw ------------------------------------------------------------------------------ */

static void test_raw(void) {
    float m[30];
    int i;
    char path[512];
    tsio_data_options o;
    all_rows a;
    ts_error err;
    for (i = 0; i < 30; i++) m[i] = i == 7 ? NAN : (float)i * 0.25f - 1.0f;
    snprintf(path, sizeof path, "%s/m.f32", tmp_dir);
    CHECK_STATUS(tsio_write_raw(path, m, 10, 3, &err), TS_OK);
    tsio_data_options_init(&o);
    o.chunk_rows = 3;
    CHECK_STATUS(read_all(path, &o, &a), TS_OK);
    CHECK(a.format == TSIO_DATA_RAW && a.n_cols == 3 && a.n_rows == 10 && a.n_chunks == 4);
    if (a.n_rows == 10) {
        CHECK(memcmp(a.x, m, sizeof m) == 0);
        CHECK(isnan(a.labels[0]) && a.qids[9] == -1 && a.comments[5] == NULL);
        CHECK(a.chunk_first_row[3] == 9 && a.chunk_sizes[3] == 1);
    }
    free_rows(&a);
    /* the column count must match when given */
    o.n_cols = 4;
    CHECK_STATUS(read_all(path, &o, &a), TS_ERR_SHAPE);
    CHECK(has(&a.err, "3 columns, expected 4"));
    free_rows(&a);
    o.n_cols = 3;
    CHECK_STATUS(read_all(path, &o, &a), TS_OK);
    free_rows(&a);
    {
        /* truncated in the 8th row; trailing bytes; bad version */
        FILE *f = fopen(path, "rb");
        char buf[24 + 120 + 8];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        CHECK(n == 24 + 120);
        write_file_n("t.f32", buf, 24 + 7 * 12 + 5);
        snprintf(path, sizeof path, "%s/t.f32", tmp_dir);
        CHECK_STATUS(read_all(path, &o, &a), TS_ERR_PARSE);
        /* a regular file is measured against its header before anything is read */
        CHECK_MSG(has(&a.err, "truncated: the header declares 10 rows of 3 columns"), "%s", a.err.message);
        CHECK(a.n_rows == 0);
        free_rows(&a);
        memcpy(buf + 24 + 120, "extra", 5);
        CHECK_STATUS(read_all(write_file_n("x.f32", buf, 24 + 120 + 5), &o, &a), TS_ERR_PARSE);
        CHECK(has(&a.err, "data after the 10 rows"));
        free_rows(&a);
        /* a row count whose byte size, header added, wraps past 2^64 (rows x 3 x 4 =
         * 2^64 - 16, + 24 = 8): measured against the file at once, as any other claim
         * (the wrapped size passed the check, and the file was read to its end first) */
        {
            char big[24 + 120];
            memcpy(big, buf, sizeof big);
            uint64_t rows = (UINT64_MAX - 15) / 12;
            for (int b = 0; b < 8; b++) big[16 + b] = (char)(rows >> (8 * b));
            CHECK_STATUS(read_all(write_file_n("w.f32", big, sizeof big), &o, &a), TS_ERR_PARSE);
            CHECK_MSG(has(&a.err, "too large") || has(&a.err, "the header declares"), "%s", a.err.message);
            CHECK(a.n_rows == 0);
            free_rows(&a);
        }
        buf[8] = 2;
        CHECK_STATUS(read_all(write_file_n("v.f32", buf, 24 + 120), &o, &a), TS_ERR_UNSUPPORTED);
        free_rows(&a);
        buf[8] = 1;
        buf[0] = 'X';
        CHECK_STATUS(read_all(write_file_n("mg.f32", buf, 24 + 120), &o, &a), TS_ERR_PARSE);
        CHECK(has(&a.err, "TSRAWF32"));
        free_rows(&a);
    }
    /* zero rows is fine; writer errors */
    snprintf(path, sizeof path, "%s/zero.raw", tmp_dir);
    CHECK_STATUS(tsio_write_raw(path, NULL, 0, 5, &err), TS_OK);
    tsio_data_options_init(&o);
    CHECK_STATUS(read_all(path, &o, &a), TS_OK);
    CHECK(a.n_rows == 0 && a.n_cols == 5);
    free_rows(&a);
    CHECK_STATUS(tsio_write_raw("/nonexistent/dir/m.f32", m, 10, 3, &err), TS_ERR_IO);
    CHECK(has(&err, "/nonexistent/dir/m.f32"));
    CHECK_STATUS(tsio_write_raw(path, m, 1, 0, &err), TS_ERR_INVALID_ARGUMENT);
}

/* ---- Format resolution and stdin ------------------------------------------------------ */

static void test_formats(void) {
    static const char *names[] = {"auto", "svmlight", "csv", "tsv", "raw"};
    tsio_data_format f;
    int i;
    float m[2] = {1.5f, 2.5f};
    char path[512];
    tsio_data_options o;
    all_rows a;
    for (i = 0; i < 5; i++) {
        CHECK(strcmp(tsio_data_format_name((tsio_data_format)i), names[i]) == 0);
        CHECK(tsio_data_format_from_name(names[i], &f) == TS_OK && f == (tsio_data_format)i);
    }
    CHECK(tsio_data_format_from_name("parquet", &f) == TS_ERR_INVALID_ARGUMENT);
    /* sniffing: a raw file without a telling extension, an SVMlight file */
    snprintf(path, sizeof path, "%s/matrix.bin", tmp_dir);
    CHECK_STATUS(tsio_write_raw(path, m, 1, 2, NULL), TS_OK);
    tsio_data_options_init(&o);
    CHECK_STATUS(read_all(path, &o, &a), TS_OK);
    CHECK(a.format == TSIO_DATA_RAW && a.n_rows == 1 && a.x[1] == 2.5f);
    free_rows(&a);
    o.n_cols = 3;
    CHECK_STATUS(read_all(write_file("data.txt", "1 2:5\n"), &o, &a), TS_OK);
    CHECK(a.format == TSIO_DATA_SVMLIGHT && a.n_rows == 1 && a.x[2] == 5.0f);
    free_rows(&a);
    /* a short file (less than the magic) sniffs as SVMlight */
    CHECK_STATUS(read_all(write_file("short", "1 0:1"), &o, &a), TS_OK);
    CHECK(a.format == TSIO_DATA_SVMLIGHT && a.n_rows == 1);
    free_rows(&a);
    /* extensions: upper case too; a UTF-8 BOM is skipped */
    o.n_cols = 0;
    CHECK_STATUS(read_all(write_file("U.CSV", "\xEF\xBB\xBF" "1,2\n"), &o, &a), TS_OK);
    CHECK(a.format == TSIO_DATA_CSV && a.n_rows == 1 && a.x[0] == 1.0f);
    free_rows(&a);
}

/* Read "-" with the given file (or the read end of a pipe) as standard input. */
static ts_status read_stdin_from(int fd, const tsio_data_options *o, all_rows *a) {
    int saved = dup(STDIN_FILENO);
    ts_status st;
    dup2(fd, STDIN_FILENO);
    close(fd);
    st = read_all("-", o, a);
    dup2(saved, STDIN_FILENO);
    close(saved);
    return st;
}

static void test_stdin(void) {
    float m[6] = {1, 2, 3, 4, 5, 6};
    char path[512];
    tsio_data_options o;
    all_rows a;
    int fds[2];
    static const char text[] = "3 qid:1 1:0.5\n1 qid:1 2:0.25\n";
    tsio_data_options_init(&o);
    snprintf(path, sizeof path, "%s/stdin.f32", tmp_dir);
    CHECK_STATUS(tsio_write_raw(path, m, 2, 3, NULL), TS_OK);
    CHECK_STATUS(read_stdin_from(open(path, O_RDONLY), &o, &a), TS_OK);
    CHECK(a.format == TSIO_DATA_RAW && a.n_rows == 2 && a.n_cols == 3);
    if (a.n_rows == 2) CHECK(memcmp(a.x, m, sizeof m) == 0);
    free_rows(&a);
    /* SVMlight through a pipe: the sniffed bytes are not lost */
    o.n_cols = 3;
    if (pipe(fds) == 0) {
        CHECK(write(fds[1], text, sizeof text - 1) == (ssize_t)(sizeof text - 1));
        close(fds[1]);
        CHECK_STATUS(read_stdin_from(fds[0], &o, &a), TS_OK);
        CHECK(a.format == TSIO_DATA_SVMLIGHT && a.n_rows == 2);
        if (a.n_rows == 2) CHECK(a.labels[0] == 3 && a.x[1] == 0.5f && a.x[3 + 2] == 0.25f && a.qids[1] == 1);
        CHECK(strcmp(a.err.message, "") == 0 || a.err.status == TS_OK);
        free_rows(&a);
    }
    /* errors name standard input */
    if (pipe(fds) == 0) {
        CHECK(write(fds[1], "1 1:x\n", 6) == 6);
        close(fds[1]);
        CHECK_STATUS(read_stdin_from(fds[0], &o, &a), TS_ERR_PARSE);
        CHECK_MSG(has(&a.err, "<stdin>:1: bad feature value"), "%s", a.err.message);
        free_rows(&a);
    }
}

/* ---- Real files ----------------------------------------------------------------------- */

static size_t count_groups(const int64_t *q, size_t n) {
    size_t i, g = 0;
    for (i = 0; i < n; i++)
        if (i == 0 || q[i] != q[i - 1]) g++;
    return g;
}

static void test_real_rank_test(void) {
    tsio_data_options o = svm_opts(701);
    all_rows a;
    o.strict_cols = 1;
    o.query_file = TS_TEST_DATA_DIR "/../../data/example/rank.test.query";
    CHECK_STATUS(read_all(TS_TEST_DATA_DIR "/../../data/example/rank.test", &o, &a), TS_OK);
    CHECK_MSG(a.n_rows == 768, "%zu rows; %s", a.n_rows, a.err.message);
    if (a.n_rows == 768) {
        CHECK(count_groups(a.qids, a.n_rows) == 50 && a.qids[0] == 0 && a.qids[767] == 49);
        CHECK(a.qids[11] == 0 && a.qids[12] == 1); /* the first group has 12 rows */
        /* "2 1:0.74 6:0.87 8:0.75 ..." */
        CHECK(a.labels[0] == 2.0 && a.x[0] == 0.0f && a.x[1] == 0.74f && a.x[6] == 0.87f && a.x[2] == 0.0f);
    }
    free_rows(&a);
    /* without the query file: qid -1 everywhere */
    o.query_file = NULL;
    CHECK_STATUS(read_all(TS_TEST_DATA_DIR "/../../data/example/rank.test", &o, &a), TS_OK);
    CHECK(a.n_rows == 768 && a.qids[0] == -1);
    free_rows(&a);
}

static void test_real_mq2008(void) {
    tsio_data_options o = svm_opts(47);
    all_rows a;
    size_t i, with_docid = 0;
    o.strict_cols = 1;
    o.absent_value = NAN;
    o.chunk_rows = 1000;
    CHECK_STATUS(read_all(TS_TEST_DATA_DIR "/letor/mq2008.fold1.test.txt", &o, &a), TS_OK);
    CHECK_MSG(a.n_rows == 2874, "%zu rows; %s", a.n_rows, a.err.message);
    if (a.n_rows == 2874) {
        CHECK(count_groups(a.qids, a.n_rows) == 156 && a.qids[0] == 18219);
        CHECK(a.n_chunks == 3 && a.chunk_first_row[2] == 2000 && a.chunk_first_line[2] == 2001);
        /* "0 qid:18219 1:0.052893 2:1.000000 3:0.750000 ..." */
        CHECK(a.labels[0] == 0.0 && isnan(a.x[0]) && a.x[1] == 0.052893f && a.x[2] == 1.0f && a.x[3] == 0.75f);
        for (i = 0; i < a.n_rows; i++) {
            with_docid += a.comments[i] && strncmp(a.comments[i], "docid = GX", 10) == 0;
            if (i < 3 && a.comments[i]) CHECK(a.comments[i][strlen(a.comments[i]) - 1] != '\r');
        }
        CHECK(with_docid == a.n_rows);
        CHECK(a.comments[1] && strcmp(a.comments[1], "docid = GX010-40-4497720 inc = 0.00110683825421716 prob = 0.089706") == 0);
    }
    free_rows(&a);
    /* one-based: 46 columns, id 46 -> column 45 */
    o.one_based = 1;
    o.n_cols = 46;
    CHECK_STATUS(read_all(TS_TEST_DATA_DIR "/letor/mq2008.fold1.test.txt", &o, &a), TS_OK);
    CHECK(a.n_rows == 2874 && a.n_cols == 46);
    if (a.n_rows == 2874) CHECK(a.x[0] == 0.052893f);
    free_rows(&a);
    /* too few columns with strict ids */
    o.n_cols = 45;
    CHECK_STATUS(read_all(TS_TEST_DATA_DIR "/letor/mq2008.fold1.test.txt", &o, &a), TS_ERR_SHAPE);
    CHECK_MSG(has(&a.err, "mq2008.fold1.test.txt:1: feature id 46 is past the model's 45 features (1..45)"), "%s",
              a.err.message);
    free_rows(&a);
}

static void remove_tree(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

int main(void) {
    const char *base = getenv("TMPDIR");
    snprintf(tmp_dir, sizeof tmp_dir, "%s/tsio_test_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmp_dir)) {
        perror("mkdtemp");
        return 2;
    }
    RUN_TEST(test_svm_basic);
    RUN_TEST(test_svm_one_based);
    RUN_TEST(test_svm_crlf_blank_comments);
    RUN_TEST(test_svm_chunks);
    RUN_TEST(test_svm_query_file);
    RUN_TEST(test_svm_ids);
    RUN_TEST(test_svm_errors);
    RUN_TEST(test_svm_values);
    RUN_TEST(test_number_exactness);
    RUN_TEST(test_number_locale);
    RUN_TEST(test_long_line);
    RUN_TEST(test_garbage);
    RUN_TEST(test_open_errors);
    RUN_TEST(test_empty_inputs);
    RUN_TEST(test_csv_basic);
    RUN_TEST(test_csv_errors);
    RUN_TEST(test_csv_text_columns);
    RUN_TEST(test_tsv);
    RUN_TEST(test_raw);
    RUN_TEST(test_formats);
    RUN_TEST(test_stdin);
    RUN_TEST(test_real_rank_test);
    RUN_TEST(test_real_mq2008);
    remove_tree(tmp_dir);
    return check_summary("test_data_readers");
}
