/* test_dump_ubjson.c: unit tests of the XGBoost dump loader, the UBJSON reader, feature mapping and base score. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "io/loaders.h"
#include "io/ubjson.h"
#include "model/forest.h"
#include "treescore.h"

/* ---- helpers ------------------------------------------------------------------------ */

static ts_model *load(const char *text, ts_model_format f, ts_status want, ts_error *err) {
    ts_model *m = NULL;
    ts_status st = ts_model_load_buffer(text, strlen(text), f, "m.json", &m, err);
    CHECK_MSG(st == want, "status %s, expected %s: %s", ts_status_name(st), ts_status_name(want),
              st ? err->message : "");
    return m;
}

/* The naive engine's scores of n rows of 3 columns. */
static void score3(const ts_model *m, const float (*rows)[3], size_t n, double *out) {
    ts_scorer_options o;
    ts_scorer *s = NULL;
    ts_error err;
    ts_scorer_options_init(&o);
    o.engine = TS_ENGINE_NAIVE;
    o.n_threads = 1;
    CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_OK);
    if (s) CHECK_STATUS(ts_scorer_score(s, &rows[0][0], n, 3, 3, out, &err), TS_OK);
    ts_scorer_free(s);
}

/* ---- dumps -------------------------------------------------------------------------- */

/* Tree 0: f2 < 0.5 ? (f0 < -1.25 ? 0.125 : -2.5 [NaN: yes]) : 0.001 [NaN: no, missing absent];
 * children listed "no" first. Tree 1: one leaf 0.25. */
static const char dump_numbered[] =
    "[{\"nodeid\": 0, \"split\": \"f2\", \"split_condition\": 0.5, \"yes\": 7, \"no\": 3, \"children\": [\n"
    "  {\"nodeid\": 3, \"leaf\": 0.001},\n"
    "  {\"nodeid\": 7, \"split\": \"f0\", \"split_condition\": -1.25, \"yes\": 4, \"no\": 5, \"missing\": 4,\n"
    "   \"children\": [{\"nodeid\": 4, \"leaf\": 0.125}, {\"nodeid\": 5, \"leaf\": -2.5}]}]},\n"
    " {\"nodeid\": 0, \"leaf\": 0.25}]";

static double ref_numbered(double base, const float *x) {
    double s = base, t;
    if (!isnan(x[2]) && x[2] < 0.5f)
        t = (isnan(x[0]) || x[0] < -1.25f) ? (double)0.125f : (double)-2.5f;
    else
        t = (double)0.001f;
    s += t;
    return s + (double)0.25f;
}

static void test_dump_numbered(void) {
    ts_error err;
    ts_model *m = load(dump_numbered, TS_FORMAT_AUTO, TS_OK, &err);
    if (!m) return;
    ts_model_info info;
    ts_model_get_info(m, &info, NULL);
    CHECK(info.format == TS_FORMAT_XGBOOST_DUMP);
    CHECK(info.n_trees == 2 && info.n_features == 3 && info.base_score == 0.0);
    CHECK(ts_model_feature_name(m, 0) == NULL);
    CHECK(isnan(ts_model_absent_value(m)));
    static const float rows[][3] = {
        {0, 0, 0.4999999f}, {0, 0, 0.5f}, {-1.25f, 0, 0}, {-1.2499999f, 0, 0}, {NAN, 0, 0}, {0, 0, NAN},
        {-2, 0, -INFINITY}, {5, 0, INFINITY},
    };
    size_t n = sizeof rows / sizeof rows[0];
    double out[8];
    score3(m, rows, n, out);
    for (size_t i = 0; i < n; i++) CHECK_SAME_DOUBLE(out[i], ref_numbered(0.0, rows[i]));
    CHECK_STATUS(ts_model_set_base_score(m, 1.5, &err), TS_OK);
    CHECK_STATUS(ts_model_set_base_score(m, NAN, &err), TS_ERR_INVALID_ARGUMENT);
    score3(m, rows, n, out);
    for (size_t i = 0; i < n; i++) CHECK_SAME_DOUBLE(out[i], ref_numbered(1.5, rows[i]));
    const char *names[] = {"a", "b"};
    CHECK_STATUS(ts_model_map_features(m, names, 2, &err), TS_ERR_INVALID_ARGUMENT); /* no names to map */
    ts_model_free(m);
}

static void test_dump_forms(void) {
    ts_error err;
    /* the ES-LTR wrapper, and get_dump's list of strings */
    char wrapped[2048];
    snprintf(wrapped, sizeof wrapped, "{\"objective\": \"reg:logistic\", \"splits\": %s}", dump_numbered);
    ts_model *m = load(wrapped, TS_FORMAT_AUTO, TS_OK, &err);
    if (m) {
        ts_model_info info;
        ts_model_get_info(m, &info, NULL);
        CHECK(info.format == TS_FORMAT_XGBOOST_DUMP && strcmp(info.objective, "reg:logistic") == 0);
        CHECK(info.n_trees == 2);
    }
    ts_model_free(m);
    m = load("[\"{\\\"nodeid\\\": 0, \\\"split\\\": \\\"f1\\\", \\\"split_condition\\\": 2, \\\"yes\\\": 1, "
             "\\\"no\\\": 2, \\\"missing\\\": 2, \\\"children\\\": [{\\\"nodeid\\\": 1, \\\"leaf\\\": 1}, "
             "{\\\"nodeid\\\": 2, \\\"leaf\\\": 2}]}\", \"{\\\"nodeid\\\": 0, \\\"leaf\\\": 0.5}\"]",
             TS_FORMAT_AUTO, TS_OK, &err);
    if (m) {
        static const float rows[][3] = {{0, 1.9999999f, 0}, {0, 2, 0}, {0, NAN, 0}};
        double out[3];
        score3(m, rows, 3, out);
        CHECK_SAME_DOUBLE(out[0], 1.5);
        CHECK_SAME_DOUBLE(out[1], 2.5);
        CHECK_SAME_DOUBLE(out[2], 2.5);
    }
    ts_model_free(m);
    m = load("[]", TS_FORMAT_XGBOOST_DUMP, TS_ERR_PARSE, &err); /* no trees */
    CHECK(strstr(err.message, "no trees") != NULL);
    ts_model_free(m);
}

static const char dump_named[] =
    "[{\"nodeid\": 0, \"split\": \"bm25 title\", \"split_condition\": 1, \"yes\": 1, \"no\": 2, \"missing\": 1,"
    "  \"children\": [{\"nodeid\": 1, \"split\": \"clicks\", \"split_condition\": 10, \"yes\": 3, \"no\": 4,"
    "    \"missing\": 4, \"children\": [{\"nodeid\": 3, \"leaf\": 1}, {\"nodeid\": 4, \"leaf\": 2}]},"
    "   {\"nodeid\": 2, \"leaf\": 4}]},"
    " {\"nodeid\": 0, \"split\": \"f0\", \"split_condition\": 0, \"yes\": 1, \"no\": 2, \"missing\": 2,"
    "  \"children\": [{\"nodeid\": 1, \"leaf\": 8}, {\"nodeid\": 2, \"leaf\": 16}]}]";

static void test_dump_names(void) {
    ts_error err;
    ts_model *m = load(dump_named, TS_FORMAT_AUTO, TS_OK, &err);
    if (!m) return;
    /* order of first use: bm25 title = 0, clicks = 1, f0 = 2 (a name, since not all are fN) */
    CHECK(ts_model_feature_name(m, 0) && strcmp(ts_model_feature_name(m, 0), "bm25 title") == 0);
    CHECK(ts_model_feature_name(m, 2) && strcmp(ts_model_feature_name(m, 2), "f0") == 0);
    static const float first_use[][3] = {{0.5f, 20, -1}, {2, 0, 1}, {NAN, 5, NAN}};
    double out[3];
    score3(m, first_use, 3, out);
    CHECK_SAME_DOUBLE(out[0], 2.0 + 8.0);
    CHECK_SAME_DOUBLE(out[1], 4.0 + 16.0);
    CHECK_SAME_DOUBLE(out[2], 1.0 + 16.0);

    const char *bad[] = {"clicks", "bm25", "f0"};
    CHECK_STATUS(ts_model_map_features(m, bad, 3, &err), TS_ERR_SHAPE);
    CHECK(strstr(err.message, "'bm25 title'") != NULL);
    score3(m, first_use, 3, out); /* unchanged on failure */
    CHECK_SAME_DOUBLE(out[0], 2.0 + 8.0);
    /* a name the model reads given to two columns is ambiguous: refused (the first of
     * them was taken silently); a repeated name the model does not read is harmless */
    const char *dup[] = {"clicks", "bm25 title", "f0", "clicks"};
    CHECK_STATUS(ts_model_map_features(m, dup, 4, &err), TS_ERR_SHAPE);
    CHECK(strstr(err.message, "'clicks'") != NULL && strstr(err.message, "columns 0 and 3") != NULL);
    score3(m, first_use, 3, out);
    CHECK_SAME_DOUBLE(out[0], 2.0 + 8.0);

    const char *cols[] = {"f0", "unused", "clicks", "bm25 title", "unused"};
    CHECK_STATUS(ts_model_map_features(m, cols, 5, &err), TS_OK);
    ts_model_info info;
    ts_model_get_info(m, &info, NULL);
    CHECK(info.n_features == 5 && strcmp(ts_model_feature_name(m, 3), "bm25 title") == 0);
    ts_scorer *s = NULL;
    ts_scorer_options o;
    ts_scorer_options_init(&o);
    o.engine = TS_ENGINE_NAIVE;
    CHECK_STATUS(ts_scorer_create(m, &o, &s, &err), TS_OK);
    static const float mapped[][5] = {{-1, 0, 20, 0.5f, 0}, {1, 0, 0, 2, 0}, {NAN, 0, 5, NAN, 0}};
    if (s) CHECK_STATUS(ts_scorer_score(s, &mapped[0][0], 3, 5, 5, out, &err), TS_OK);
    CHECK_SAME_DOUBLE(out[0], 2.0 + 8.0);
    CHECK_SAME_DOUBLE(out[1], 4.0 + 16.0);
    CHECK_SAME_DOUBLE(out[2], 1.0 + 16.0);
    ts_scorer_free(s);
    ts_model_free(m);
}

static void test_dump_errors(void) {
    static const struct { const char *text; ts_status want; const char *msg; } cases[] = {
        {"[{\"nodeid\": 0, \"split\": \"f0\", \"split_condition\": [1, 3], \"yes\": 1, \"no\": 2, \"children\": []}]",
         TS_ERR_UNSUPPORTED, "categorical"},
        {"[{\"nodeid\": 0, \"split\": \"f0\", \"split_condition\": 1, \"yes\": 1, \"no\": 2, \"missing\": 5,"
         " \"children\": [{\"nodeid\": 1, \"leaf\": 1}, {\"nodeid\": 2, \"leaf\": 2}]}]",
         TS_ERR_INVALID_MODEL, "missing (5) is neither"},
        {"[{\"nodeid\": 0, \"split\": \"f0\", \"split_condition\": 1, \"yes\": 1, \"no\": 2,"
         " \"children\": [{\"nodeid\": 1, \"leaf\": 1}, {\"nodeid\": 9, \"leaf\": 2}]}]",
         TS_ERR_INVALID_MODEL, "children are not"},
        {"[{\"nodeid\": 0, \"split\": \"f0\", \"split_condition\": 1, \"yes\": 1, \"no\": 2,"
         " \"children\": [{\"nodeid\": 1, \"leaf\": 1}]}]",
         TS_ERR_INVALID_MODEL, "1 children"},
        {"[{\"nodeid\": 0, \"split\": \"f0\", \"split_condition\": 1, \"yes\": 1, \"no\": 2,"
         " \"children\": [{\"nodeid\": 1, \"leaf\": 1}, {\"nodeid\": 2, \"leaf\": 2}, {\"nodeid\": 3, \"leaf\": 3}]}]",
         TS_ERR_INVALID_MODEL, "more than 2 children"},
        {"[{\"nodeid\": 0, \"leaf\": 1, \"split\": \"f0\"}]", TS_ERR_INVALID_MODEL, "both a leaf"},
        {"[{\"nodeid\": 0}]", TS_ERR_PARSE, "neither a leaf"},
        {"[{\"nodeid\": 0, \"leaf\": \"x\"}]", TS_ERR_PARSE, "leaf"},
        {"[{\"nodeid\": 0, \"leaf\": NaN}]", TS_ERR_PARSE, "bad leaf"},
        {"[{\"nodeid\": 0, \"split\": \"f0\", \"split_condition\": -Infinity, \"yes\": 1, \"no\": 2,"
         " \"children\": [{\"nodeid\": 1, \"leaf\": 1}, {\"nodeid\": 2, \"leaf\": 2}]}]",
         TS_ERR_UNSUPPORTED, "-inf"},
        {"[{\"nodeid\": 0, \"leaf\": 1}", TS_ERR_PARSE, "truncated"},
        {"{\"objective\": \"x\"}", TS_ERR_PARSE, "\"splits\""},
        {"[1]", TS_ERR_PARSE, "tree node"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ts_error err;
        ts_model *m = NULL;
        ts_status st = ts_model_load_buffer(cases[i].text, strlen(cases[i].text), TS_FORMAT_XGBOOST_DUMP, "d.json",
                                            &m, &err);
        CHECK_MSG(st == cases[i].want && !m, "case %zu: %s", i, st ? err.message : "loaded");
        CHECK_MSG(st == TS_OK || (strstr(err.message, cases[i].msg) && strncmp(err.message, "d.json", 6) == 0),
                  "case %zu: message '%s' lacks '%s'", i, err.message, cases[i].msg);
        ts_model_free(m);
    }
}

static void test_detect(void) {
    CHECK(tsio_detect_model_format("[{\"nodeid\": 0}]", 15) == TS_FORMAT_XGBOOST_DUMP);
    CHECK(tsio_detect_model_format(" \n[", 3) == TS_FORMAT_XGBOOST_DUMP);
    const char *es = "{\"objective\": \"reg:linear\", \"splits\": []}";
    CHECK(tsio_detect_model_format(es, strlen(es)) == TS_FORMAT_XGBOOST_DUMP);
    const char *xgb = "{\"learner\": {\"splits\": 1}, \"version\": [3, 2, 0]}";
    CHECK(tsio_detect_model_format(xgb, strlen(xgb)) == TS_FORMAT_XGBOOST_JSON);
    CHECK(tsio_detect_model_format("{L\0\0\0\0\0\0\0\7learner", 18) == TS_FORMAT_XGBOOST_UBJSON);
    CHECK(tsio_detect_model_format("{i\7learner", 10) == TS_FORMAT_XGBOOST_UBJSON);
    CHECK(tsio_detect_model_format("{ \"learner\"", 11) == TS_FORMAT_XGBOOST_JSON);
    CHECK(tsio_detect_model_format("{}", 2) == TS_FORMAT_XGBOOST_JSON);
}

/* ---- UBJSON ------------------------------------------------------------------------- */

typedef struct ubuf {
    unsigned char b[4096];
    size_t n;
} ubuf;

static void put(ubuf *u, const void *p, size_t k) {
    if (u->n + k <= sizeof u->b) memcpy(u->b + u->n, p, k);
    u->n += k;
}
static void put_c(ubuf *u, char c) { put(u, &c, 1); }
static void put_be(ubuf *u, uint64_t v, size_t k) {
    for (size_t i = 0; i < k; i++) put_c(u, (char)(v >> (8 * (k - 1 - i))));
}
static void key(ubuf *u, const char *s) { /* keys alternate length types, as any writer may */
    size_t k = strlen(s);
    if (k % 2) {
        put_c(u, 'L');
        put_be(u, k, 8);
    } else {
        put_c(u, 'i');
        put_be(u, k, 1);
    }
    put(u, s, k);
}
static void str(ubuf *u, const char *s) {
    put_c(u, 'S');
    put_c(u, 'U');
    put_be(u, strlen(s), 1);
    put(u, s, strlen(s));
}
static void f32s(ubuf *u, const float *v, size_t n) {
    put(u, "[$d#i", 5);
    put_be(u, n, 1);
    for (size_t i = 0; i < n; i++) {
        uint32_t r;
        memcpy(&r, &v[i], 4);
        put_be(u, r, 4);
    }
}
static void i32s(ubuf *u, const int32_t *v, size_t n) {
    put(u, "[$l#i", 5);
    put_be(u, n, 1);
    for (size_t i = 0; i < n; i++) put_be(u, (uint32_t)v[i], 4);
}
static void u8s(ubuf *u, const unsigned char *v, size_t n) { /* counted, untyped: each with its marker */
    put(u, "[#U", 3);
    put_be(u, n, 1);
    for (size_t i = 0; i < n; i++) {
        put_c(u, 'U');
        put_be(u, v[i], 1);
    }
}

/* One tree: node 0: f1 < 0.25 (NaN left) ? leaf 1 (-0.5) : leaf 2 (0.75). */
static const float u_cond[] = {0.25f, -0.5f, 0.75f};
static const int32_t u_left[] = {1, -1, -1}, u_right[] = {2, -1, -1}, u_index[] = {1, 0, 0};
static const unsigned char u_dleft[] = {1, 0, 0};

static void build_ubj(ubuf *u) {
    u->n = 0;
    put_c(u, '{');
    key(u, "learner");
    put_c(u, '{');
    key(u, "gradient_booster");
    put_c(u, '{');
    key(u, "model");
    put_c(u, '{');
    key(u, "gbtree_model_param");
    put(u, "{", 1);
    key(u, "num_trees");
    str(u, "1");
    put_c(u, 'N'); /* a no-op */
    put_c(u, '}');
    key(u, "trees");
    put_c(u, '[');
    put_c(u, '{');
    key(u, "default_left");
    u8s(u, u_dleft, 3);
    key(u, "left_children");
    i32s(u, u_left, 3);
    key(u, "right_children");
    i32s(u, u_right, 3);
    key(u, "split_conditions");
    f32s(u, u_cond, 3);
    key(u, "split_indices");
    i32s(u, u_index, 3);
    key(u, "tree_param");
    put(u, "{#i\1", 4); /* a counted object */
    key(u, "num_nodes");
    str(u, "3"); /* counted: no closing marker */
    put_c(u, '}'); /* the tree */
    put_c(u, ']');
    put_c(u, '}');
    key(u, "name");
    str(u, "gbtree");
    put_c(u, '}');
    key(u, "learner_model_param");
    put_c(u, '{');
    key(u, "base_score");
    str(u, "[5E-1]");
    key(u, "num_feature");
    str(u, "2");
    put_c(u, '}');
    key(u, "objective");
    put_c(u, '{');
    key(u, "name");
    str(u, "reg:squarederror");
    put_c(u, '}');
    put_c(u, '}');
    key(u, "version");
    put(u, "[$i#i\3\3\2\0", 9);
    put_c(u, '}');
}

static void test_ubjson_model(void) {
    ubuf u;
    ts_error err;
    ts_model *m = NULL;
    build_ubj(&u);
    CHECK(u.n < sizeof u.b);
    CHECK(tsio_detect_model_format((const char *)u.b, u.n) == TS_FORMAT_XGBOOST_UBJSON);
    CHECK_STATUS(ts_model_load_buffer(u.b, u.n, TS_FORMAT_AUTO, "m.ubj", &m, &err), TS_OK);
    if (!m) {
        fprintf(stderr, "  %s\n", err.message);
        return;
    }
    ts_model_info info;
    ts_model_get_info(m, &info, NULL);
    CHECK(info.format == TS_FORMAT_XGBOOST_UBJSON && info.n_trees == 1 && info.n_features_declared == 2);
    CHECK(info.base_score == 0.5 && strcmp(info.objective, "reg:squarederror") == 0);
    static const float rows[][3] = {{0, 0.2499999f, 0}, {0, 0.25f, 0}, {0, NAN, 0}};
    double out[3];
    score3(m, rows, 3, out);
    CHECK_SAME_DOUBLE(out[0], 0.5 - 0.5);
    CHECK_SAME_DOUBLE(out[1], 0.5 + 0.75);
    CHECK_SAME_DOUBLE(out[2], 0.5 - 0.5);
    ts_model_free(m);

    /* every prefix fails with a message naming the file (an exact-size copy: a sanitizer
     * build catches any read past the end) */
    for (size_t k = 0; k < u.n; k++) {
        char *p = malloc(k ? k : 1);
        memcpy(p, u.b, k);
        m = NULL;
        ts_status st = ts_model_load_buffer(p, k, TS_FORMAT_XGBOOST_UBJSON, "cut.ubj", &m, &err);
        CHECK_MSG(st != TS_OK && !m && strncmp(err.message, "cut.ubj", 7) == 0, "prefix %zu: %s", k, err.message);
        ts_model_free(m);
        free(p);
    }
}

static void test_ubjson_transcode(void) {
#define BYTES(lit) lit, sizeof(lit) - 1
    static const struct { const char *in; size_t n; const char *want; } ok[] = {
        {BYTES("[i\377U\377I\200\0l\0\0\0\1L\200\0\0\0\0\0\0\0]"), "[-1,255,-32768,1,-9223372036854775808]"},
        {BYTES("[TFZNC\"S\x69\3a\nb]"), "[true,false,null,\"\\\"\",\"a\\u000ab\"]"},
        {BYTES("[d\x7f\xc0\0\0D\x3f\xf0\0\0\0\0\0\0d\xff\x80\0\0]"), "[NaN,1,-Infinity]"},
        {BYTES("{$i#i\2i\1a\5i\1b\6"), "{\"a\":5,\"b\":6}"},
        {BYTES("[[$d#i\0H\x69\4-1e3]"), "[[],-1e3]"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        tsu_json j;
        ts_error err;
        ts_status st = tsu_to_json(ok[i].in, ok[i].n, "t", &j, &err);
        CHECK_MSG(st == TS_OK, "case %zu: %s", i, err.message);
        if (st != TS_OK) continue;
        CHECK_MSG(j.size == strlen(ok[i].want) && memcmp(j.text, ok[i].want, j.size) == 0, "case %zu: '%.*s'", i,
                  (int)j.size, j.text);
        tsu_json_free(&j);
    }
    static const struct { const char *in; size_t n; ts_status want; const char *msg; } bad[] = {
        {BYTES("[$d#L\x7f\xff\xff\xff\xff\xff\xff\xff"), TS_ERR_PARSE, "truncated"}, /* a huge count */
        {BYTES("[#L\0\0\0\1\0\0\0\0"), TS_ERR_PARSE, "truncated"},
        {BYTES("[$Z#L\x7f\xff\xff\xff\xff\xff\xff\xff"), TS_ERR_UNSUPPORTED, "payload-free"},
        {BYTES("[$d]"), TS_ERR_PARSE, "count"},
        {BYTES("[#i\377"), TS_ERR_PARSE, "negative"},
        {BYTES("SL\0\0\0\0\0\0\1\0ab"), TS_ERR_PARSE, "truncated"},
        {BYTES("[x]"), TS_ERR_PARSE, "unknown UBJSON type marker 'x'"},
        {BYTES("[]]"), TS_ERR_PARSE, "after the top-level value"},
        {BYTES("{Sx"), TS_ERR_PARSE, "integer"},
        {BYTES("H\x69\2ab"), TS_ERR_PARSE, "high-precision"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tsu_json j;
        ts_error err;
        ts_status st = tsu_to_json(bad[i].in, bad[i].n, "t.ubj", &j, &err);
        CHECK_MSG(st == bad[i].want && strstr(err.message, bad[i].msg) && strncmp(err.message, "t.ubj: byte ", 12) == 0,
                  "bad case %zu: %s %s", i, ts_status_name(st), st ? err.message : "");
        if (st == TS_OK) tsu_json_free(&j);
    }
    /* nesting deeper than TSU_MAX_DEPTH */
    char deep[300];
    memset(deep, '[', sizeof deep);
    tsu_json j;
    ts_error err;
    CHECK_STATUS(tsu_to_json(deep, sizeof deep, "deep", &j, &err), TS_ERR_LIMIT);
}

int main(void) {
    RUN_TEST(test_dump_numbered);
    RUN_TEST(test_dump_forms);
    RUN_TEST(test_dump_names);
    RUN_TEST(test_dump_errors);
    RUN_TEST(test_detect);
    RUN_TEST(test_ubjson_model);
    RUN_TEST(test_ubjson_transcode);
    return check_summary("test_dump_ubjson");
}
