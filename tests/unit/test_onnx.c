/* test_onnx.c: unit tests of the protobuf reader and the ONNX loader (scores of two hand-made models, detection, refusals, truncation and byte changes). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "io/loaders.h"
#include "io/protobuf.h"
#include "model/forest.h"
#include "treescore.h"

#ifndef TS_TEST_DATA_DIR
#define TS_TEST_DATA_DIR "tests/data"
#endif
#define CORPUS TS_TEST_DATA_DIR "/../fuzz/corpus/fuzz_onnx/"
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static char *read_file(const char *name, size_t *size) {
    char path[512];
    snprintf(path, sizeof path, CORPUS "%s", name);
    FILE *f = fopen(path, "rb");
    CHECK_MSG(f != NULL, "cannot open %s", path);
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *d = malloc(n > 0 ? (size_t)n : 1);
    *size = fread(d, 1, (size_t)n, f);
    fclose(f);
    return d;
}

/* ---- the protobuf reader ------------------------------------------------------------------ */

static int next_status(const char *bytes, size_t n) {
    tspb_msg m = tspb_open((const uint8_t *)bytes, n);
    tspb_field f;
    int r;
    while ((r = tspb_next(&m, &f)) > 0) {
    }
    return r;
}

static void test_protobuf(void) {
    /* field 1 varint 150, field 2 "abc", field 3 fixed32, field 4 fixed64 */
    static const char ok[] = "\x08\x96\x01\x12\x03" "abc" "\x1d\x00\x00\x80\x3f" "\x21\x00\x00\x00\x00\x00\x00\xf0\x3f";
    tspb_msg m = tspb_open((const uint8_t *)ok, sizeof ok - 1);
    tspb_field f;
    CHECK(tspb_next(&m, &f) == 1 && f.num == 1 && f.wire == TSPB_VARINT && f.v == 150);
    CHECK(tspb_next(&m, &f) == 1 && f.num == 2 && f.wire == TSPB_LEN && f.len == 3 && !memcmp(ok + f.pos, "abc", 3));
    CHECK(tspb_next(&m, &f) == 1 && f.num == 3 && tspb_float_bits((uint32_t)f.v) == 1.0f);
    CHECK(tspb_next(&m, &f) == 1 && f.num == 4 && tspb_double_bits(f.v) == 1.0);
    CHECK(tspb_next(&m, &f) == 0);
    /* malformed: every cut of the message inside a field, long varints, groups, field 0 */
    for (size_t cut = 1; cut < sizeof ok - 1; cut++) {
        int r = next_status(ok, cut);
        int boundary = cut == 3 || cut == 8 || cut == 13;
        CHECK_MSG(r == (boundary ? 0 : -1), "cut %zu: %d", cut, r);
    }
    CHECK(next_status("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11) == 0); /* 2^64 - 1: 10 bytes */
    CHECK(next_status("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 11) == -1); /* bit 64 */
    CHECK(next_status("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12) == -1); /* 11 bytes */
    CHECK(next_status("\x0b\x0c", 2) == -1);              /* group start */
    CHECK(next_status("\x00\x01", 2) == -1);              /* field number 0 */
    CHECK(next_status("\x0e\x01", 2) == -1);              /* wire type 6 */
    CHECK(next_status("\x12\xff\xff\xff\xff\x0f", 6) == -1); /* a length past the end */
    /* a sub-message ends with its field, whatever it claims inside */
    static const char nested[] = "\x0a\x02\x12\x05" "\x10\x01";
    m = tspb_open((const uint8_t *)nested, sizeof nested - 1);
    CHECK(tspb_next(&m, &f) == 1 && f.len == 2);
    tspb_msg sub = tspb_sub(&m, &f);
    tspb_field g;
    CHECK(tspb_next(&sub, &g) == -1);
    CHECK(tspb_next(&m, &f) == 1 && f.num == 2 && f.v == 1);
    /* repeated scalars: unpacked, packed and both, in order */
    static const char rep[] = "\x08\x01" "\x0a\x03\x02\x03\x7f" "\x08\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01";
    m = tspb_open((const uint8_t *)rep, sizeof rep - 1);
    size_t n = 0;
    CHECK(tspb_repeated(&m, 1, TSPB_S_VARINT, &n, NULL, NULL) == 1 && n == 5);
    int64_t v[5];
    CHECK(tspb_repeated(&m, 1, TSPB_S_VARINT, &n, v, NULL) == 1);
    CHECK(v[0] == 1 && v[1] == 2 && v[2] == 3 && v[3] == 127 && v[4] == -2);
    static const char flt[] = "\x3a\x08\x00\x00\x80\x3f\x00\x00\x00\xc0" "\x3d\x00\x00\x40\x40";
    m = tspb_open((const uint8_t *)flt, sizeof flt - 1);
    double d[3];
    n = 3;
    CHECK(tspb_repeated(&m, 7, TSPB_S_FLOAT, &n, NULL, d) == 1 && n == 3 && d[0] == 1 && d[1] == -2 && d[2] == 3);
    static const char bad[] = "\x3a\x03\x00\x00\x80";    /* a packed run of 3 bytes: not whole floats */
    m = tspb_open((const uint8_t *)bad, sizeof bad - 1);
    CHECK(tspb_repeated(&m, 7, TSPB_S_FLOAT, &n, NULL, NULL) == -1);
    static const char wrong[] = "\x38\x01";              /* a float field sent as a varint */
    m = tspb_open((const uint8_t *)wrong, sizeof wrong - 1);
    CHECK(tspb_repeated(&m, 7, TSPB_S_FLOAT, &n, NULL, NULL) == -1);
}

/* ---- scores -------------------------------------------------------------------------------- */

/* Rows on thresholds, members, NaN, -0.0, the next float of a threshold. */
static const float rows[][6] = {
    {0.25f, 1.0f, 0.0f, 1.5f, -0.3f, 0.7f},
    {0.2500001f, 2.0f, NAN, 1.5f, -0.3f, NAN},
    {NAN, -1.0f, 0.0f, NAN, 0.69999f, 0.7000001f},
    {-1.0f, 1.5f, -0.0f, 1.4999999f, -0.30001f, 0.0f},
    {-2.0f, NAN, 1e-30f, 2.0f, 5.0f, -5.0f},
    {0.5f, 0.5f, 0.1f, -1.0f, 0.2f, 0.30000001f},
};
/* tests/conformance/test_onnx.py's exact walk of each model's arrays (Ens.exact). */
static const double v5_ref[][2] = {
    {0x1.2000000000000p+2, -0x1.e666660000000p-1}, {0x1.8400000000000p+2, 0x1.3333340000000p-2},
    {0x1.0800000000000p+1, -0x1.cccccc0000000p-2}, {0x1.0000000000000p+2, 0x1.9999a00000000p-5},
    {0x0.0p+0, -0x1.7999998000000p+1},             {0x1.0000000000000p+2, -0x1.a666660000000p-1},
};
static const double v3_ref[][2] = {
    {0x1.4000008000000p+0, -0x1.aaaaaac000000p+1}, {0x1.2666670000000p+0, -0x1.844443c000000p+1},
    {0x1.5999998000000p+0, -0x1.d11110c000000p+1}, {0x1.4000008000000p+0, -0x1.aaaaaac000000p+1},
    {0x1.5999998000000p+0, -0x1.d11110c000000p+1}, {0x1.b333334000000p-1, -0x1.1111114000000p+1},
};

static void check_model(const char *name, const double (*ref)[2]) {
    size_t size;
    char *data = read_file(name, &size);
    if (!data) return;
    ts_model *m = NULL;
    ts_error err;
    CHECK_MSG(ts_model_load_buffer(data, size, TS_FORMAT_AUTO, name, &m, &err) == TS_OK, "%s: %s", name, err.message);
    free(data);
    if (!m) return;
    CHECK(m->format == TS_FORMAT_ONNX && m->n_outputs == 2);
    ts_scorer *s = NULL;
    ts_scorer_options o;
    ts_scorer_options_init(&o);
    o.engine = TS_ENGINE_NAIVE;
    CHECK(ts_scorer_create(m, &o, &s, &err) == TS_OK);
    double out[COUNT(rows) * 2];
    CHECK(s && ts_scorer_score(s, &rows[0][0], COUNT(rows), 6, 6, out, &err) == TS_OK);
    for (size_t i = 0; s && i < COUNT(rows); i++)
        for (int k = 0; k < 2; k++)
            CHECK_MSG(out[i * 2 + k] == ref[i][k], "%s row %zu output %d: %a, expected %a", name, i, k,
                      out[i * 2 + k], ref[i][k]);
    ts_scorer_free(s);
    ts_model_free(m);
}

static void test_scores(void) {
    check_model("v5_every_mode.onnx", v5_ref);
    check_model("v3_modes.onnx", v3_ref);
}

static void test_detection(void) {
    static const char *const names[] = {"skl_gb_reg.onnx", "skl_gb_bin_zipmap.onnx", "lgb_multi.onnx",
                                        "xgb_reg.onnx", "v5_every_mode.onnx", "v3_modes_average_double.onnx"};
    for (size_t i = 0; i < COUNT(names); i++) {
        size_t size;
        char *data = read_file(names[i], &size);
        if (!data) continue;
        CHECK_MSG(tsio_detect_model_format(data, size) == TS_FORMAT_ONNX, "%s", names[i]);
        free(data);
    }
    CHECK(!tsio_is_onnx("\x08\x07", 2));                      /* ir_version, no graph */
    CHECK(!tsio_is_onnx("\x08\x07\x3a\x05\x0a", 5));          /* a graph past the end */
    CHECK(tsio_is_onnx("\x08\x07\x3a\x00", 4));
    CHECK(!tsio_is_onnx("\x3a\x00\x08\x07", 4));              /* ir_version not first */
    CHECK(!tsio_is_onnx("tree\nversion=v4\n", 16));
    CHECK(!tsio_is_onnx("{\"learner\": {}}", 15));
    ts_model_format f;
    CHECK(ts_model_format_from_name("onnx", &f) == TS_OK && f == TS_FORMAT_ONNX);
    CHECK(!strcmp(ts_model_format_name(TS_FORMAT_ONNX), "onnx"));
}

static void expect_fail(const char *bytes, size_t n, ts_status want, const char *needle) {
    ts_model *m = (ts_model *)1;
    ts_error err;
    ts_status st = ts_model_load_buffer(bytes, n, TS_FORMAT_ONNX, "x.onnx", &m, &err);
    CHECK_MSG(st == want && m == NULL && strstr(err.message, needle) && !strncmp(err.message, "x.onnx", 6),
              "%s (%s), expected %s with '%s'", err.message, ts_status_name(st), ts_status_name(want), needle);
}

static void test_refusals(void) {
    expect_fail("\x08\x07", 2, TS_ERR_INVALID_MODEL, "no graph");
    expect_fail("\x08\x07\x3a\x00\x3a\x00", 6, TS_ERR_INVALID_MODEL, "two graphs");
    expect_fail("\x08\x07\x3a\x05", 4, TS_ERR_PARSE, "malformed protobuf");
    expect_fail("\x08\x07\x3a\x00", 4, TS_ERR_INVALID_MODEL, "no input");
    /* a graph with an input X (float) and one Relu node */
    static const char relu[] = "\x08\x07\x3a\x1a"
                               "\x0a\x0f\x0a\x01X\x12\x01Y\x1a\x01r\x22\x04Relu"   /* node */
                               "\x5a\x07\x0a\x01X\x12\x02\x0a\x00";                /* input X, tensor type */
    expect_fail(relu, sizeof relu - 1, TS_ERR_UNSUPPORTED, "the graph's input has element type 0");
    static const char relu2[] = "\x08\x07\x3a\x1c"
                                "\x0a\x0f\x0a\x01X\x12\x01Y\x1a\x01r\x22\x04Relu"
                                "\x5a\x09\x0a\x01X\x12\x04\x0a\x02\x08\x01";
    expect_fail(relu2, sizeof relu2 - 1, TS_ERR_UNSUPPORTED, "op_type 'Relu', name 'r'");
}

/* Every prefix and byte change of the seeds loads or fails with a named error (the
 * sanitizer stage runs this too). A prefix may load: a cut at a field boundary is a
 * shorter message. */
static void test_truncated_and_corrupted(void) {
    static const char *const names[] = {"v5_every_mode.onnx", "skl_gb_multi.onnx", "v3_modes_average_double.onnx"};
    for (size_t k = 0; k < COUNT(names); k++) {
        size_t size;
        char *data = read_file(names[k], &size);
        if (!data) continue;
        size_t bad = 0;
        for (size_t cut = 0; cut < size; cut++) {
            char *copy = malloc(cut ? cut : 1);
            memcpy(copy, data, cut);
            ts_error err;
            ts_model *m = (ts_model *)1;
            ts_status st = ts_model_load_buffer(copy, cut, TS_FORMAT_ONNX, names[k], &m, &err);
            if (st == TS_OK) ts_model_free(m);
            else if (m != NULL || strncmp(err.message, names[k], strlen(names[k])) != 0) bad++;
            free(copy);
        }
        const unsigned char flips[] = {0x00, 0xff, 0x7f, 0x80, 0x01, 0x0a, 0x12, 0x3a};
        for (size_t i = 0; i < size; i++) {
            char *copy = malloc(size);
            memcpy(copy, data, size);
            copy[i] = (char)flips[i % sizeof flips];
            ts_error err;
            ts_model *m = (ts_model *)1;
            ts_status st = ts_model_load_buffer(copy, size, TS_FORMAT_ONNX, names[k], &m, &err);
            if (st == TS_OK) ts_model_free(m);
            else if (m != NULL || strncmp(err.message, names[k], strlen(names[k])) != 0) bad++;
            free(copy);
        }
        CHECK_MSG(bad == 0, "%s: %zu cuts or changes gave an unnamed error", names[k], bad);
        free(data);
    }
}

int main(void) {
    RUN_TEST(test_protobuf);
    RUN_TEST(test_scores);
    RUN_TEST(test_detection);
    RUN_TEST(test_refusals);
    RUN_TEST(test_truncated_and_corrupted);
    return check_summary("test_onnx");
}
