/* test_catboost.c: unit tests of the CatBoost loaders (.cbm and JSON), their FlatBuffers reader and their refusals. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "io/catboost_core.h"
#include "io/flatbuf.h"
#include "io/loaders.h"
#include "model/forest.h"
#include "treescore.h"

#ifndef TS_TEST_DATA_DIR
#define TS_TEST_DATA_DIR "tests/data"
#endif

/*
 * Reference scores: CatBoost 1.2.10 predict(rows, prediction_type="RawFormulaVal") on the
 * float32 rows listed (tests/data/PROVENANCE.md): each model's first three borders of
 * every feature, the float below and above them, an all-NaN row, an all-zero row and a
 * row with NaN and +inf. Hex floats, so the values are exact; compared with ==.
 */
static const float oblivious_rows[][5] = {
    {-0x1.b529220000000p-2f, -0x1.4720080000000p+1f, 0x1.ac221a0000000p-2f, -0x1.22b2b20000000p-1f, -0x1.cf834c0000000p-2f},
    {-0x1.b529200000000p-2f, -0x1.028ee80000000p+1f, -0x1.daff5c0000000p-3f, -0x1.bafd360000000p-1f, 0x1.a9580c0000000p+1f},
    {-0x1.b5291e0000000p-2f, -0x1.69180c0000000p-2f, -0x1.2009d00000000p-2f, -0x1.560a2c0000000p-1f, -0x1.0e1e580000000p+0f},
    {-0x1.009c940000000p-2f, 0x1.ed83180000000p-2f, -0x1.e88ecc0000000p-3f, 0x1.ea5f5a0000000p-1f, -0x1.9931dc0000000p-3f},
    {-0x1.009c920000000p-2f, 0x1.8bbaea0000000p+0f, 0x1.1718120000000p-1f, -0x1.02ad580000000p-1f, -0x1.7674480000000p-3f},
    {-0x1.009c900000000p-2f, 0x1.ef61ee0000000p+0f, -0x1.14175a0000000p-2f, -0x1.f2cee40000000p-3f, 0x1.0097a00000000p+0f},
    {0x1.670f320000000p-2f, -0x1.2ab8b60000000p-2f, 0x1.c3dc260000000p-1f, 0x1.2923a40000000p-1f, 0x1.76da380000000p-4f},
    {0x1.670f340000000p-2f, -0x1.6a01380000000p+1f, 0x1.05745e0000000p+0f, -0x1.eb568e0000000p-1f, -0x1.ab2aac0000000p+0f},
    {0x1.670f360000000p-2f, 0x1.66add20000000p-1f, -0x1.c7711e0000000p-2f, -0x1.138f560000000p+0f, 0x1.ac077e0000000p-6f},
    {-0x1.b01b200000000p-5f, 0x1.2deab20000000p+0f, 0x1.7eac420000000p-1f, 0x1.8cef380000000p-3f, 0x1.1c93fe0000000p+0f},
    {-0x1.a4e9440000000p-3f, 0x1.2deab40000000p+0f, 0x1.2b09b00000000p-1f, 0x1.2a427a0000000p-1f, -0x1.b7f8380000000p-3f},
    {-0x1.90cc4a0000000p-1f, 0x1.2deab60000000p+0f, -0x1.3f37ee0000000p+1f, 0x1.6158080000000p-1f, 0x1.f7293e0000000p-2f},
    {-0x1.a38c240000000p+0f, 0x1.9548be0000000p+0f, -0x1.ed9e780000000p-1f, 0x1.83b27a0000000p-1f, -0x1.045f980000000p+1f},
    {-0x1.d438a00000000p-1f, 0x1.9548c00000000p+0f, 0x1.2809e60000000p+0f, -0x1.1439860000000p+1f, -0x1.fdfe280000000p-2f},
    {0x1.4fe4800000000p-2f, 0x1.9548c20000000p+0f, 0x1.9734320000000p+0f, -0x1.30f43c0000000p+0f, 0x1.6b0a6c0000000p-2f},
    {-0x1.0c644e0000000p+0f, 0x1.e5c5220000000p+0f, -0x1.62bbd60000000p-6f, -0x1.7d2f400000000p-2f, -0x1.b7daf80000000p+0f},
    {0x1.ae8c1e0000000p+0f, 0x1.e5c5240000000p+0f, 0x1.81d31e0000000p-1f, 0x1.234c300000000p+0f, 0x1.659ba60000000p-2f},
    {-0x1.474b540000000p-1f, 0x1.e5c5260000000p+0f, -0x1.99b3d00000000p-1f, 0x1.5ebd100000000p+0f, -0x1.75db8a0000000p+0f},
    {-0x1.3157580000000p-1f, -0x1.48f42a0000000p-2f, -0x1.5f3f240000000p-2f, 0x1.2694320000000p-1f, -0x1.3fc4d20000000p+0f},
    {-0x1.bae22a0000000p+0f, -0x1.214a880000000p-8f, -0x1.5f3f220000000p-2f, 0x1.839d1e0000000p-1f, 0x1.b9a71e0000000p-3f},
    {-0x1.44c4720000000p-2f, 0x1.2c45740000000p-2f, -0x1.5f3f200000000p-2f, 0x1.a268e60000000p-1f, -0x1.96c1ce0000000p-1f},
    {0x1.12ec640000000p-3f, -0x1.c5c1640000000p-4f, 0x1.a07a960000000p-1f, 0x1.cc0f480000000p-3f, 0x1.4667880000000p+1f},
    {0x1.7fa7d60000000p+0f, 0x1.7f2a2a0000000p+0f, 0x1.a07a980000000p-1f, -0x1.5c7bf60000000p-2f, -0x1.379bd00000000p-1f},
    {0x1.10c0e20000000p-1f, -0x1.23b7240000000p+1f, 0x1.a07a9a0000000p-1f, 0x1.1125d20000000p+0f, -0x1.4d54840000000p+0f},
    {-0x1.f504500000000p-1f, -0x1.9a33380000000p-1f, 0x1.0288a40000000p+0f, 0x1.482d5c0000000p-1f, 0x1.0621220000000p+1f},
    {-0x1.945e460000000p-3f, 0x1.88f6180000000p-1f, 0x1.0288a60000000p+0f, 0x1.c28a880000000p+0f, 0x1.7bfc1e0000000p-1f},
    {0x1.5e59520000000p+0f, -0x1.13e2860000000p+0f, 0x1.0288a80000000p+0f, -0x1.a0a6c80000000p-1f, 0x1.81443c0000000p+0f},
    {NAN, NAN, NAN, NAN, NAN},
    {0x0.0p+0f, 0x0.0p+0f, 0x0.0p+0f, 0x0.0p+0f, 0x0.0p+0f},
    {0x1.50b62e0000000p-1f, NAN, -0x1.cf53be0000000p-2f, INFINITY, -0x1.672a6c0000000p-1f},
};
static const double oblivious_ref[][1] = {
    {0x1.18f2e2c233354p-3},
    {0x1.18f2e2c233354p-3},
    {0x1.140b822291a06p-1},
    {0x1.140b822291a06p-1},
    {0x1.4dbf5ed6e2318p+0},
    {0x1.7d2e04376f02fp+1},
    {0x1.b581cea11a648p-2},
    {-0x1.54a77cb88bfe0p-4},
    {0x1.aa6f03b433a3ap+0},
    {0x1.aa77f46c62b5cp-1},
    {0x1.aa77f46c62b5cp-1},
    {0x1.dfcd4295153a2p-1},
    {0x1.dfcd4295153a2p-1},
    {0x1.58e7563bf683cp-2},
    {0x1.51ecd6009d3e2p+0},
    {0x1.61d9b385ca300p+0},
    {0x1.2fb0d85b3dab2p+1},
    {0x1.10b0bcea605bcp+1},
    {0x1.fcf678d0e43ebp-2},
    {0x1.fcf678d0e43ebp-2},
    {0x1.140b822291a06p-1},
    {0x1.aa77f46c62b5cp-1},
    {0x1.c701c60d77bbcp+0},
    {0x1.d7a1a8429a68cp-1},
    {-0x1.83012012ecf00p-4},
    {0x1.b581cea11a648p-2},
    {0x1.a497a2b5f76d6p-2},
    {0x1.fcf678d0e43ebp-2},
    {0x1.aa77f46c62b5cp-1},
    {0x1.aa6f03b433a3ap+0},
};
static const float multiclass_depthwise_rows[][5] = {
    {-0x1.1bc9220000000p+0f, -0x1.4720080000000p+1f, 0x1.ac221a0000000p-2f, -0x1.22b2b20000000p-1f, -0x1.cf834c0000000p-2f},
    {-0x1.1bc9200000000p+0f, -0x1.028ee80000000p+1f, -0x1.daff5c0000000p-3f, -0x1.bafd360000000p-1f, 0x1.a9580c0000000p+1f},
    {-0x1.1bc91e0000000p+0f, -0x1.69180c0000000p-2f, -0x1.2009d00000000p-2f, -0x1.560a2c0000000p-1f, -0x1.0e1e580000000p+0f},
    {-0x1.5a1bfa0000000p-2f, 0x1.ed83180000000p-2f, -0x1.e88ecc0000000p-3f, 0x1.ea5f5a0000000p-1f, -0x1.9931dc0000000p-3f},
    {-0x1.5a1bf80000000p-2f, 0x1.8bbaea0000000p+0f, 0x1.1718120000000p-1f, -0x1.02ad580000000p-1f, -0x1.7674480000000p-3f},
    {-0x1.5a1bf60000000p-2f, 0x1.ef61ee0000000p+0f, -0x1.14175a0000000p-2f, -0x1.f2cee40000000p-3f, 0x1.0097a00000000p+0f},
    {-0x1.354fee0000000p-2f, -0x1.2ab8b60000000p-2f, 0x1.c3dc260000000p-1f, 0x1.2923a40000000p-1f, 0x1.76da380000000p-4f},
    {-0x1.354fec0000000p-2f, -0x1.6a01380000000p+1f, 0x1.05745e0000000p+0f, -0x1.eb568e0000000p-1f, -0x1.ab2aac0000000p+0f},
    {-0x1.354fea0000000p-2f, 0x1.66add20000000p-1f, -0x1.c7711e0000000p-2f, -0x1.138f560000000p+0f, 0x1.ac077e0000000p-6f},
    {-0x1.b01b200000000p-5f, 0x1.6e62f60000000p-1f, 0x1.7eac420000000p-1f, 0x1.8cef380000000p-3f, 0x1.1c93fe0000000p+0f},
    {-0x1.a4e9440000000p-3f, 0x1.6e62f80000000p-1f, 0x1.2b09b00000000p-1f, 0x1.2a427a0000000p-1f, -0x1.b7f8380000000p-3f},
    {-0x1.90cc4a0000000p-1f, 0x1.6e62fa0000000p-1f, -0x1.3f37ee0000000p+1f, 0x1.6158080000000p-1f, 0x1.f7293e0000000p-2f},
    {-0x1.a38c240000000p+0f, 0x1.0714540000000p+0f, -0x1.ed9e780000000p-1f, 0x1.83b27a0000000p-1f, -0x1.045f980000000p+1f},
    {-0x1.d438a00000000p-1f, 0x1.0714560000000p+0f, 0x1.2809e60000000p+0f, -0x1.1439860000000p+1f, -0x1.fdfe280000000p-2f},
    {0x1.4fe4800000000p-2f, 0x1.0714580000000p+0f, 0x1.9734320000000p+0f, -0x1.30f43c0000000p+0f, 0x1.6b0a6c0000000p-2f},
    {-0x1.0c644e0000000p+0f, 0x1.67ed300000000p+0f, 0x1.51d0c60000000p-1f, -0x1.7d2f400000000p-2f, -0x1.b7daf80000000p+0f},
    {0x1.ae8c1e0000000p+0f, 0x1.816c320000000p-1f, 0x1.51d0c80000000p-1f, 0x1.234c300000000p+0f, 0x1.659ba60000000p-2f},
    {-0x1.474b540000000p-1f, -0x1.99b9380000000p-1f, 0x1.51d0ca0000000p-1f, 0x1.5ebd100000000p+0f, -0x1.75db8a0000000p+0f},
    {-0x1.3157580000000p-1f, -0x1.48f42a0000000p-2f, 0x1.bd98580000000p-1f, 0x1.2694320000000p-1f, -0x1.3fc4d20000000p+0f},
    {-0x1.bae22a0000000p+0f, -0x1.214a880000000p-8f, 0x1.bd985a0000000p-1f, 0x1.839d1e0000000p-1f, 0x1.b9a71e0000000p-3f},
    {-0x1.44c4720000000p-2f, 0x1.2c45740000000p-2f, 0x1.bd985c0000000p-1f, 0x1.a268e60000000p-1f, -0x1.96c1ce0000000p-1f},
    {0x1.12ec640000000p-3f, -0x1.c5c1640000000p-4f, 0x1.1633340000000p-1f, 0x1.cc0f480000000p-3f, -0x1.0b3ee60000000p+1f},
    {0x1.7fa7d60000000p+0f, 0x1.7f2a2a0000000p+0f, -0x1.050e760000000p+1f, -0x1.5c7bf60000000p-2f, -0x1.0b3ee40000000p+1f},
    {0x1.10c0e20000000p-1f, -0x1.23b7240000000p+1f, 0x1.2cabf20000000p+0f, 0x1.1125d20000000p+0f, -0x1.0b3ee20000000p+1f},
    {NAN, NAN, NAN, NAN, NAN},
    {0x0.0p+0f, 0x0.0p+0f, 0x0.0p+0f, 0x0.0p+0f, 0x0.0p+0f},
    {-0x1.f504500000000p-1f, NAN, 0x1.62ae160000000p-5f, INFINITY, 0x1.0621220000000p+1f},
};
static const double multiclass_depthwise_ref[][3] = {
    {0x1.52740aafce140p-2, -0x1.a16dcc5861bf8p-3, -0x1.037a49073a632p-3},
    {0x1.52740aafce140p-2, -0x1.a16dcc5861bf8p-3, -0x1.037a49073a632p-3},
    {0x1.676a3f8d9eb92p-3, -0x1.0e580b0d1c00fp-3, -0x1.6448d2020ae42p-5},
    {0x1.676a3f8d9eb92p-3, -0x1.0e580b0d1c00fp-3, -0x1.6448d2020ae42p-5},
    {-0x1.188964d7bac40p-8, -0x1.3f64ee79c1268p-3, 0x1.482939a07ef68p-3},
    {0x1.8460b81de74a8p-6, -0x1.b27831d0d9c9fp-3, 0x1.81ec1acd1cd94p-3},
    {0x1.7d23fe4a14741p-1, -0x1.66a2ec225d87cp-2, -0x1.93a51071cb64ap-2},
    {0x1.7d23fe4a14741p-1, -0x1.66a2ec225d87cp-2, -0x1.93a51071cb64ap-2},
    {-0x1.b76cba871bf55p-4, -0x1.0eb855048898ap-4, 0x1.631287c5d280bp-3},
    {0x1.a7d66a97aa4efp-4, -0x1.351370d6fe1a1p-3, 0x1.84a0ee2ca49dcp-5},
    {-0x1.b76cba871bf55p-4, -0x1.0eb855048898ap-4, 0x1.631287c5d280bp-3},
    {0x1.676a3f8d9eb92p-3, -0x1.0e580b0d1c00fp-3, -0x1.6448d2020ae42p-5},
    {0x1.52740aafce140p-2, -0x1.a16dcc5861bf8p-3, -0x1.037a49073a632p-3},
    {0x1.7d23fe4a14741p-1, -0x1.66a2ec225d87cp-2, -0x1.93a51071cb64ap-2},
    {-0x1.47279d87314b5p-3, -0x1.8c8a31a4bb700p-2, 0x1.180f00342a09dp-1},
    {-0x1.188964d7bac40p-8, -0x1.3f64ee79c1268p-3, 0x1.482939a07ef68p-3},
    {-0x1.04812bcc933fdp-1, -0x1.de16d8407338fp-3, 0x1.7c06e1dcb01a4p-1},
    {0x1.8b85e90e80ed9p-2, -0x1.bc0f5161d5cebp-3, -0x1.5afc80bb2c124p-3},
    {0x1.8b85e90e80ed9p-2, -0x1.bc0f5161d5cebp-3, -0x1.5afc80bb2c124p-3},
    {0x1.152269fbbfd29p-1, -0x1.279289568dc6bp-2, -0x1.02b24aa0f1de3p-2},
    {0x1.7d23fe4a14741p-1, -0x1.66a2ec225d87cp-2, -0x1.93a51071cb64ap-2},
    {-0x1.96e80274942e3p-2, -0x1.3c6c192370780p-4, 0x1.e60308bd707ddp-2},
    {-0x1.5238b5ef0bb3cp-1, -0x1.411b7f8218810p-2, 0x1.f2c675b017feep-1},
    {0x1.d8b7ae2b928e4p-2, -0x1.2324fbdcf1ad6p-2, -0x1.6b25649d418f9p-3},
    {0x1.52740aafce140p-2, -0x1.a16dcc5861bf8p-3, -0x1.037a49073a632p-3},
    {-0x1.b76cba871bf55p-4, -0x1.0eb855048898ap-4, 0x1.631287c5d280bp-3},
    {0x1.676a3f8d9eb92p-3, -0x1.0e580b0d1c00fp-3, -0x1.6448d2020ae42p-5},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static char *read_data_file(const char *name, size_t *size) {
    char path[1024];
    snprintf(path, sizeof path, "%s/models/%s", TS_TEST_DATA_DIR, name);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 4096;
            char *p = realloc(buf, cap);
            if (!p) break;
            buf = p;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    fclose(f);
    *size = n;
    return buf;
}

static ts_model *load(const char *name, ts_model_format fmt) {
    size_t size;
    char *data = read_data_file(name, &size);
    CHECK_MSG(data != NULL, "cannot read %s", name);
    if (!data) return NULL;
    ts_error err;
    ts_model *m = NULL;
    ts_status st = ts_model_load_buffer(data, size, fmt, name, &m, &err);
    CHECK_MSG(st == TS_OK, "%s: %s", name, err.message);
    free(data);
    return m;
}

/* The IR reference score of output k: its base, then its trees' leaves in tree order. */
static double ref_score(const ts_model *m, uint32_t k, const float *row) {
    double s = m->output_base ? m->output_base[k] : m->base_score;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        const tsm_tree *tr = &m->trees[t];
        if (tr->output == k) s += tr->weight * tr->leaf_values[tsm_tree_exit_leaf(tr, row)];
    }
    return s;
}

static void check_scores(const char *name, ts_model_format fmt, const float (*rows)[5], size_t n_rows,
                         const double *ref, uint32_t k) {
    ts_model *m = load(name, fmt);
    if (!m) return;
    CHECK_MSG(m->n_outputs == k, "%s: %u outputs, expected %u", name, m->n_outputs, k);
    CHECK(m->format == fmt);
    for (size_t i = 0; i < n_rows; i++)
        for (uint32_t j = 0; j < k; j++) {
            double s = ref_score(m, j, rows[i]);
            CHECK_MSG(s == ref[i * k + j], "%s row %zu output %u: %a, CatBoost %a", name, i, j, s, ref[i * k + j]);
        }
    ts_model_free(m);
}

static void test_scores(void) {
    check_scores("cb_small_oblivious.cbm", TS_FORMAT_CATBOOST, oblivious_rows, COUNT(oblivious_rows),
                 &oblivious_ref[0][0], 1);
    check_scores("cb_small_oblivious.json", TS_FORMAT_CATBOOST_JSON, oblivious_rows, COUNT(oblivious_rows),
                 &oblivious_ref[0][0], 1);
    check_scores("cb_small_multiclass_depthwise.cbm", TS_FORMAT_CATBOOST, multiclass_depthwise_rows,
                 COUNT(multiclass_depthwise_rows), &multiclass_depthwise_ref[0][0], 3);
    check_scores("cb_small_multiclass_depthwise.json", TS_FORMAT_CATBOOST_JSON, multiclass_depthwise_rows,
                 COUNT(multiclass_depthwise_rows), &multiclass_depthwise_ref[0][0], 3);
}

static void test_detection_and_info(void) {
    static const char *const names[] = {"cb_small_oblivious.cbm", "cb_small_oblivious.json",
                                        "cb_small_multiclass_depthwise.cbm", "cb_small_multiclass_depthwise.json"};
    for (size_t i = 0; i < COUNT(names); i++) {
        size_t size;
        char *data = read_data_file(names[i], &size);
        if (!data) continue;
        ts_model_format want = strstr(names[i], ".cbm") ? TS_FORMAT_CATBOOST : TS_FORMAT_CATBOOST_JSON;
        CHECK_MSG(tsio_detect_model_format(data, size) == want, "%s detected as %d", names[i],
                  (int)tsio_detect_model_format(data, size));
        free(data);
    }
    CHECK(tsio_detect_model_format("CBM1", 4) == TS_FORMAT_CATBOOST);
    CHECK(tsio_detect_model_format("{\"features_info\": {}}", 21) == TS_FORMAT_CATBOOST_JSON);
    CHECK(tsio_detect_model_format("{\"learner\": {}, \"features_info\": 1}", 35) == TS_FORMAT_XGBOOST_JSON);
    ts_model_format f;
    CHECK(ts_model_format_from_name("catboost", &f) == TS_OK && f == TS_FORMAT_CATBOOST);
    CHECK(ts_model_format_from_name("catboost-json", &f) == TS_OK && f == TS_FORMAT_CATBOOST_JSON);
    CHECK(!strcmp(ts_model_format_name(TS_FORMAT_CATBOOST), "catboost"));
    ts_model *m = load("cb_small_oblivious.cbm", TS_FORMAT_AUTO);
    if (m) {
        ts_model_info info;
        CHECK(ts_model_get_info(m, &info, NULL) == TS_OK);
        CHECK_MSG(!strcmp(info.objective, "RMSE"), "objective '%s'", info.objective);
        CHECK(info.n_features_declared == 5);
        /* 3 oblivious trees of depth 3, then the bias as a one-leaf tree */
        CHECK(info.n_trees == 4 && m->trees[3].n_nodes == 0 && info.depth_max == 3);
        ts_model_free(m);
    }
}

/* ---- the FlatBuffers reader ----------------------------------------------------------- */

static void put32(uint8_t *b, size_t at, uint32_t v) {
    for (int i = 0; i < 4; i++) b[at + (size_t)i] = (uint8_t)(v >> (8 * i));
}
static void put16(uint8_t *b, size_t at, uint16_t v) {
    b[at] = (uint8_t)v;
    b[at + 1] = (uint8_t)(v >> 8);
}

/* A buffer: root offset 12 -> table at 12 (vtable at 4: 8 bytes, table 12 bytes, field 0
 * at +4 (i32 7), field 1 at +8 (offset to a vector at 24 of 2 i32)). */
static size_t make_buffer(uint8_t *b) {
    memset(b, 0, 64);
    put32(b, 0, 12);
    put16(b, 4, 8);   /* vtable bytes */
    put16(b, 6, 12);  /* table bytes */
    put16(b, 8, 4);   /* field 0 */
    put16(b, 10, 8);  /* field 1 */
    put32(b, 12, 8);  /* soffset: vtable at 12 - 8 = 4 */
    put32(b, 16, 7);
    put32(b, 20, 4);  /* field 1 at 20 -> vector at 24 */
    put32(b, 24, 2);
    put32(b, 28, 11);
    put32(b, 32, 13);
    return 36;
}

static void test_flatbuf(void) {
    uint8_t b[64];
    size_t n = make_buffer(b);
    tsfb_table t;
    tsfb_vector v;
    int32_t x;
    CHECK(tsfb_root(b, n, &t) == 1);
    CHECK(tsfb_i32(&t, 0, -1, &x) == 1 && x == 7);
    CHECK(tsfb_i32(&t, 5, -1, &x) == 0 && x == -1); /* beyond the vtable: absent */
    CHECK(tsfb_vector_field(&t, 1, 4, &v) == 1 && v.len == 2 && tsfb_vec_i32(&v, 1) == 13);
    CHECK(tsfb_vector_field(&t, 1, 8, &v) == -1); /* 2 x 8 bytes from 28 run past the 36 */
    /* every cut of the buffer: nothing read past it */
    for (size_t cut = 0; cut < n; cut++) {
        uint8_t *c = malloc(cut ? cut : 1);
        memcpy(c, b, cut);
        int r = tsfb_root(c, cut, &t);
        if (r == 1) {
            (void)tsfb_i32(&t, 0, -1, &x);
            CHECK_MSG(tsfb_vector_field(&t, 1, 4, &v) != 1 || v.pos + v.len * 4 <= cut, "cut %zu", cut);
        }
        free(c);
    }
    make_buffer(b);
    put32(b, 0, 1000); /* root out of range */
    CHECK(tsfb_root(b, n, &t) == -1);
    make_buffer(b);
    put32(b, 12, (uint32_t)-100); /* vtable past the end */
    CHECK(tsfb_root(b, n, &t) == -1);
    make_buffer(b);
    put32(b, 12, 100); /* vtable before the start */
    CHECK(tsfb_root(b, n, &t) == -1);
    make_buffer(b);
    put16(b, 4, 7); /* odd vtable size */
    CHECK(tsfb_root(b, n, &t) == -1);
    make_buffer(b);
    put16(b, 10, 10); /* field 1 past the table's 12 bytes */
    CHECK(tsfb_root(b, n, &t) == 1 && tsfb_vector_field(&t, 1, 4, &v) == -1);
    make_buffer(b);
    put32(b, 24, 0x40000000u); /* a vector count past the buffer */
    CHECK(tsfb_root(b, n, &t) == 1 && tsfb_vector_field(&t, 1, 4, &v) == -1);
    make_buffer(b);
    put32(b, 20, 0xfffffff0u); /* a reference past the end (no wrap) */
    CHECK(tsfb_root(b, n, &t) == 1 && tsfb_vector_field(&t, 1, 4, &v) == -1);
    make_buffer(b);
    put32(b, 24, 2); /* as a string: 2 bytes at 28 ("\v\0"), then the NUL at 30 */
    const char *s;
    size_t sn;
    CHECK(tsfb_root(b, n, &t) == 1 && tsfb_string_field(&t, 1, &s, &sn) == 1 && sn == 2);
    put32(b, 24, 12); /* 12 bytes from 28 end at 40 > 36 */
    CHECK(tsfb_string_field(&t, 1, &s, &sn) == -1);
}

/* ---- refusals and bad files ------------------------------------------------------------ */

static void expect_fail(const char *text, size_t size, ts_model_format fmt, ts_status want, const char *needle) {
    ts_error err;
    ts_model *m = (ts_model *)1;
    memset(&err, 0, sizeof err);
    ts_status st = ts_model_load_buffer(text, size, fmt, "bad.model", &m, &err);
    CHECK_MSG(st == want && m == NULL, "status %s, expected %s: %s", ts_status_name(st), ts_status_name(want),
              err.message);
    CHECK_MSG(!strncmp(err.message, "bad.model", 9), "unnamed: %s", err.message);
    CHECK_MSG(!needle || strstr(err.message, needle), "'%s' not in: %s", needle, err.message);
    if (st == TS_OK) ts_model_free(m);
}

/* The JSON model with `from` replaced by `to` (once). */
static char *edited(const char *name, const char *from, const char *to, size_t *size) {
    size_t n;
    char *data = read_data_file(name, &n);
    if (!data) return NULL;
    char *at = NULL;
    for (size_t i = 0; i + strlen(from) <= n && !at; i++)
        if (!memcmp(data + i, from, strlen(from))) at = data + i;
    CHECK_MSG(at != NULL, "'%s' not in %s", from, name);
    if (!at) {
        free(data);
        return NULL;
    }
    size_t pre = (size_t)(at - data), post = n - pre - strlen(from);
    char *out = malloc(pre + strlen(to) + post);
    memcpy(out, data, pre);
    memcpy(out + pre, to, strlen(to));
    memcpy(out + pre + strlen(to), at + strlen(from), post);
    *size = pre + strlen(to) + post;
    free(data);
    return out;
}

static void test_refusals(void) {
    expect_fail("CBM", 3, TS_FORMAT_CATBOOST, TS_ERR_PARSE, "CBM1");
    expect_fail("{\"a\": 1}", 8, TS_FORMAT_CATBOOST, TS_ERR_PARSE, "CBM1");
    expect_fail("CBM1\x10\0\0\0abc", 11, TS_FORMAT_CATBOOST, TS_ERR_PARSE, "truncated");
    expect_fail("CBM1\x04\0\0\0\xff\xff\0\0", 12, TS_FORMAT_CATBOOST, TS_ERR_PARSE, "TModelCore");
    expect_fail("{\"features_info\": {}}", 21, TS_FORMAT_CATBOOST_JSON, TS_ERR_PARSE, "oblivious_trees");
    size_t n;
    char *t = edited("cb_small_oblivious.json", "\"scale_and_bias\": [\n  1,", "\"scale_and_bias\": [\n  2,", &n);
    if (t) expect_fail(t, n, TS_FORMAT_AUTO, TS_ERR_UNSUPPORTED, "scale 2");
    free(t);
    t = edited("cb_small_oblivious.json", "\"split_index\": 2", "\"split_index\": 1", &n);
    if (t) expect_fail(t, n, TS_FORMAT_AUTO, TS_ERR_PARSE, "but the split says");
    free(t);
    t = edited("cb_small_oblivious.json", "\"split_index\": 2", "\"split_index\": 99", &n);
    if (t) expect_fail(t, n, TS_FORMAT_AUTO, TS_ERR_PARSE, "float borders");
    free(t);
    t = edited("cb_small_oblivious.json", "\"FloatFeature\"", "\"TextFeature\"", &n);
    if (t) expect_fail(t, n, TS_FORMAT_AUTO, TS_ERR_UNSUPPORTED, "TextFeature");
    free(t);
    t = edited("cb_small_oblivious.json", "\"nan_value_treatment\": \"AsIs\"", "\"nan_value_treatment\": \"Maybe\"", &n);
    if (t) expect_fail(t, n, TS_FORMAT_AUTO, TS_ERR_PARSE, "nan_value_treatment");
    free(t);
    t = edited("cb_small_oblivious.json", "\"features_info\": {", "\"features_info\": {\"text_features\": "
               "[{\"feature_index\": 0, \"flat_feature_index\": 5, \"feature_id\": \"note\"}],", &n);
    if (t) expect_fail(t, n, TS_FORMAT_AUTO, TS_ERR_UNSUPPORTED, "column 5, 'note'");
    free(t);
    t = edited("cb_small_multiclass_depthwise.json", "\"value\": [", "\"value\": [0, ", &n);
    if (t) expect_fail(t, n, TS_FORMAT_AUTO, TS_ERR_PARSE, "values per leaf");
    free(t);
}

/* ---- categorical features ------------------------------------------------------------ */

/* CatBoost 1.2.10's hashes of these strings (CalcCatFeatureHash; read from the
 * cat_features_hashes of its Python export), one or more of every CityHash length class. */
static const struct { const char *text; uint32_t hash; } hash_vectors[] = {
    {"", 797982799u},
    {"a", 3489901818u},
    {"ab", 4090249022u},
    {"abc", 978243121u},
    {"abcd", 345588365u},
    {"3", 593172586u},
    {"0", 2856682258u},
    {"-1", 288298918u},
    {"12345678", 1054993967u},
    {"123456789", 1389760245u},
    {"hello world!xyz", 559830919u},
    {"xxxxxxxxxxxxxxxx", 2067776764u},
    {"yyyyyyyyyyyyyyyyy", 782355611u},
    {"0123456789abcdefghijklmnopqrstuv", 2366114102u},
    {"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", 2675455389u},
    {"The quick brown fox jumps over the lazy dog, then again, and again and again!!!!", 265100789u},
    {"\xc3\x9cn\xc3\xaf" "c\xc3\xb6" "d\xc3\xa9", 1012553189u},
    {"nan", 761118297u},
    {"None", 1875838226u},
    {"1.5", 3968731103u},
};
/* the same character n times */
static const struct { char c; size_t n; uint32_t hash; } hash_repeats[] = {
    {'q', 64, 2229749267u},
    {'r', 65, 1172359415u},
    {'s', 128, 616771141u},
    {'k', 200, 587922392u},
};

static void test_category_hash(void) {
    for (size_t i = 0; i < COUNT(hash_vectors); i++) {
        uint32_t h = tscb_category_hash(hash_vectors[i].text, strlen(hash_vectors[i].text));
        CHECK_MSG(h == hash_vectors[i].hash, "hash of '%s': %u, CatBoost %u", hash_vectors[i].text, h,
                  hash_vectors[i].hash);
    }
    for (size_t i = 0; i < COUNT(hash_repeats); i++) {
        char buf[256];
        memset(buf, hash_repeats[i].c, hash_repeats[i].n);
        uint32_t h = tscb_category_hash(buf, hash_repeats[i].n);
        CHECK_MSG(h == hash_repeats[i].hash, "hash of '%c' x %zu: %u, CatBoost %u", hash_repeats[i].c,
                  hash_repeats[i].n, h, hash_repeats[i].hash);
    }
}

/*
 * cb_small_ctr.{cbm,json} (BinarizedTargetMeanValue CTRs of both categorical features) and
 * cb_small_onehot.{cbm,json} (one-hot splits), columns f0 (float), city (strings), level
 * (integers): CatBoost 1.2.10's RawFormulaVal of the DataFrame rows below (the last two
 * with categories the models never saw), tests/data/PROVENANCE.md.
 */
struct cat_row {
    float f0;
    const char *city, *level;
};
static const struct cat_row cat_rows[] = {
    {0x1.0000000000000p-2f, "Oslo", "0"},
    {-0x1.0000000000000p+0f, "Bergen", "1"},
    {NAN, "Turku", "2"},
    {0x0.0p+0f, "Aarhus", "3"},
    {0x1.8000000000000p+0f, "Saint Petersburg", "4"},
    {-0x1.3333340000000p-2f, "Z\xc3\xbcrich", "5"},
    {0x1.6666660000000p-1f, "Atlantis", "9"},
    {0x1.0000000000000p+1f, "", "-1"},
};
static const double cat_ctr_ref[] = {0x1.7bf3e5d5500cfp-1, 0x1.a7542d7d07810p-4, 0x1.aa4b214c8b87bp-1,
                                     0x1.62a30071505cbp+0, 0x1.49ceadd70cc95p+1, 0x1.84fe69e420ee1p+0,
                                     0x1.f058b3b6b5955p+0, 0x1.24ab82af71772p+1};
static const double cat_onehot_ref[] = {0x1.7c98ee27a84c2p+0, 0x1.08d7b67807e85p-1, 0x1.b4ca7db6b3451p-1,
                                        0x1.1e222b6dbf104p+0, 0x1.f40dcf6813fd3p+0, 0x1.476ea331e1366p+0,
                                        0x1.b09c0942fbb90p+0, 0x1.f40dcf6813fd3p+0};

/* The rows as ids (ts_model_category_id), scored by `engine`; unseen categories also as
 * every other value an unseen id may take. */
static void check_categorical(const char *name, ts_model_format fmt, const double *ref, ts_engine engine) {
    ts_model *m = load(name, fmt);
    if (!m) return;
    ts_error err;
    CHECK(!ts_model_is_categorical(m, 0) && ts_model_is_categorical(m, 1) && ts_model_is_categorical(m, 2));
    CHECK(!ts_model_is_categorical(m, 3) && !ts_model_is_categorical(NULL, 1));
    float id;
    CHECK(ts_model_category_id(m, 0, "x", 1, &id, &err) == TS_ERR_INVALID_ARGUMENT);
    CHECK(ts_model_category_id(m, 1, NULL, 1, &id, &err) == TS_ERR_INVALID_ARGUMENT);
    ts_scorer_options o;
    ts_scorer_options_init(&o);
    o.engine = engine;
    ts_scorer *s = NULL;
    ts_status st = ts_scorer_create(m, &o, &s, &err);
    CHECK_MSG(st == TS_OK, "%s: %s", name, err.message);
    if (st != TS_OK) {
        ts_model_free(m);
        return;
    }
    static const float unseen[] = {NAN, -1.0f, 1e6f, 100.0f, -0.0f};
    for (size_t i = 0; i < COUNT(cat_rows); i++) {
        float row[3] = {cat_rows[i].f0, 0, 0}, h_id;
        const char *texts[2] = {cat_rows[i].city, cat_rows[i].level};
        int seen = 1;
        for (int c = 0; c < 2; c++) {
            CHECK(ts_model_category_id(m, (uint32_t)c + 1, texts[c], strlen(texts[c]), &row[c + 1], &err) == TS_OK);
            CHECK(ts_model_category_hash_id(m, (uint32_t)c + 1, tscb_category_hash(texts[c], strlen(texts[c])), &h_id,
                                            &err) == TS_OK);
            CHECK(row[c + 1] == h_id || (row[c + 1] != row[c + 1] && h_id != h_id));
            seen &= row[c + 1] == row[c + 1];
        }
        /* the CTR model knows every training category (its tables); the one-hot models
         * only the values their splits test */
        if (ref == cat_ctr_ref) CHECK_MSG(seen == (i < 6), "%s row %zu: seen %d", name, i, seen);
        size_t variants = seen ? 1 : COUNT(unseen) - 1; /* -0.0 is id 0, a known category */
        for (size_t v = 0; v < variants; v++) {
            float x[3] = {row[0], row[1], row[2]};
            for (int c = 1; c < 3 && !seen; c++)
                if (x[c] != x[c]) x[c] = unseen[v];
            double got;
            st = ts_scorer_score(s, x, 1, 3, 3, &got, &err);
            CHECK_MSG(st == TS_OK && got == ref[i], "%s engine %s row %zu (unseen as %g): %a, CatBoost %a (%s)", name,
                      ts_engine_name(engine), i, (double)unseen[v], got, ref[i], st == TS_OK ? "" : err.message);
        }
    }
    ts_scorer_free(s);
    ts_model_free(m);
}

static void test_categorical_scores(void) {
    static const ts_engine engines[] = {TS_ENGINE_NAIVE, TS_ENGINE_QS, TS_ENGINE_VQS, TS_ENGINE_RAPID, TS_ENGINE_TREES_SIMD, TS_ENGINE_OBLIVIOUS,
                                        TS_ENGINE_AUTO};
    for (size_t e = 0; e < COUNT(engines); e++) {
        check_categorical("cb_small_ctr.json", TS_FORMAT_CATBOOST_JSON, cat_ctr_ref, engines[e]);
        check_categorical("cb_small_ctr.cbm", TS_FORMAT_CATBOOST, cat_ctr_ref, engines[e]);
        check_categorical("cb_small_onehot.json", TS_FORMAT_CATBOOST_JSON, cat_onehot_ref, engines[e]);
        check_categorical("cb_small_onehot.cbm", TS_FORMAT_CATBOOST, cat_onehot_ref, engines[e]);
    }
}

static void test_categorical_refusals(void) {
    size_t n;
    /* .cbm: the CTR provider part with no tables; a bucket naming a row past the blob */
    char *cbm = read_data_file("cb_small_ctr.cbm", &n);
    CHECK(cbm != NULL && n > 16);
    if (cbm) {
        size_t core = (size_t)((uint8_t)cbm[4] | (uint8_t)cbm[5] << 8 | (uint8_t)cbm[6] << 16 | (uint32_t)(uint8_t)cbm[7] << 24);
        CHECK(8 + core + 4 < n);
        if (8 + core + 4 < n) {
            char *t = malloc(n);
            memcpy(t, cbm, n);
            memset(t + 8 + core, 0, 4); /* zero tables */
            expect_fail(t, n, TS_FORMAT_CATBOOST, TS_ERR_PARSE, "no table");
            free(t);
        }
        free(cbm);
    }
    char *t = edited("cb_small_ctr.json", "\"combination_element\": \"cat_feature_value\"",
                     "\"combination_element\": \"float_feature\"", &n);
    if (t) expect_fail(t, n, TS_FORMAT_AUTO, TS_ERR_UNSUPPORTED, "CTR over a combination of features");
    free(t);
    t = edited("cb_small_ctr.json", "\"ctr_data\"", "\"ctr_data_x\"", &n);
    if (t) expect_fail(t, n, TS_FORMAT_AUTO, TS_ERR_PARSE, "in ctr_data");
    free(t);
    t = edited("cb_small_ctr.json", "\"hash_stride\": 3", "\"hash_stride\": 4", &n);
    if (t) expect_fail(t, n, TS_FORMAT_AUTO, TS_ERR_PARSE, "expected a number"); /* a key read as a value */
    free(t);
    t = edited("cb_small_ctr.json", "\"hash_map\": [\n    \"", "\"hash_map\": [\n    \"1", &n); /* > 2^64 */
    if (t) expect_fail(t, n, TS_FORMAT_AUTO, TS_ERR_PARSE, "not an unsigned 64-bit integer");
    free(t);
    t = edited("cb_small_ctr.json", "\"4113955880835662641\"", "\"4113955880835662642\"", &n);
    if (t) expect_fail(t, n, TS_FORMAT_AUTO, TS_ERR_PARSE, "not the hash of one category");
    free(t);
    t = edited("cb_small_ctr.json", "\"ctr_type\": \"BinarizedTargetMeanValue\"", "\"ctr_type\": \"Magic\"", &n);
    if (t) expect_fail(t, n, TS_FORMAT_AUTO, TS_ERR_UNSUPPORTED, "Magic");
    free(t);
    t = edited("cb_small_ctr.json", "\"flat_feature_index\": 1", "\"flat_feature_index\": 0", &n);
    if (t) expect_fail(t, n, TS_FORMAT_AUTO, TS_ERR_PARSE, "both float feature");
    free(t);
}

/* Every prefix of the files fails, named; byte changes never crash (the sanitizer stage
 * runs this too) and fail named when they fail. */
static void test_truncated_and_corrupted(void) {
    static const char *const names[] = {"cb_small_oblivious.cbm", "cb_small_multiclass_depthwise.cbm",
                                        "cb_small_oblivious.json", "cb_small_multiclass_depthwise.json",
                                        "cb_small_onehot.cbm", "cb_small_ctr.json", "cb_small_ctr.cbm"};
    for (size_t k = 0; k < COUNT(names); k++) {
        size_t size;
        char *data = read_data_file(names[k], &size);
        if (!data) continue;
        size_t end = size;
        if (strstr(names[k], ".json"))
            while (end > 0 && data[end - 1] != '}') end--; /* a JSON cut after its last brace still parses */
        size_t fails = 0;
        for (size_t cut = 0; cut + 1 < end; cut++) {
            char *copy = malloc(cut ? cut : 1);
            memcpy(copy, data, cut);
            ts_error err;
            ts_model *m = (ts_model *)1;
            ts_status st = ts_model_load_buffer(copy, cut, TS_FORMAT_AUTO, names[k], &m, &err);
            if (st == TS_OK || m != NULL || strncmp(err.message, names[k], strlen(names[k])) != 0) {
                if (fails++ < 3) fprintf(stderr, "%s cut at %zu: %s\n", names[k], cut, ts_status_name(st));
                if (st == TS_OK) ts_model_free(m);
            }
            free(copy);
        }
        CHECK_MSG(fails == 0, "%s: %zu truncations loaded or gave an unnamed error", names[k], fails);
        const unsigned char flips[] = {0x00, 0xff, 0x7f, 0x80, 0x01, '9', '"', '{', ']'};
        for (size_t i = 0; i < size; i++) {
            char *copy = malloc(size);
            memcpy(copy, data, size);
            copy[i] = (char)flips[i % sizeof flips];
            ts_error err;
            ts_model *m = NULL;
            ts_status st = ts_model_load_buffer(copy, size, TS_FORMAT_AUTO, names[k], &m, &err);
            if (st != TS_OK)
                CHECK_MSG(m == NULL && strncmp(err.message, names[k], strlen(names[k])) == 0, "%s", err.message);
            ts_model_free(m);
            free(copy);
        }
        free(data);
    }
}

int main(void) {
    RUN_TEST(test_scores);
    RUN_TEST(test_detection_and_info);
    RUN_TEST(test_flatbuf);
    RUN_TEST(test_refusals);
    RUN_TEST(test_truncated_and_corrupted);
    RUN_TEST(test_category_hash);
    RUN_TEST(test_categorical_scores);
    RUN_TEST(test_categorical_refusals);
    return check_summary("test_catboost");
}
