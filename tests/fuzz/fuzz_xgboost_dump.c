/* fuzz_xgboost_dump.c: libFuzzer target for the XGBoost dump loader (tsio_load_xgboost_dump) and feature mapping. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A loaded dump with names is mapped twice: to its names reversed plus one more column
 * (must succeed, and the model stays consistent), then to a list lacking the first. */
static void fuzz_mapping(ts_model *m) {
    uint32_t n = m->n_feature_names;
    if (n == 0 || n > 4096) return;
    const char **names = malloc(((size_t)n + 1) * sizeof *names);
    if (!names) return;
    for (uint32_t i = 0; i < n; i++) names[i] = m->feature_names[n - 1 - i];
    names[n] = "\x01 not a name of the dump";
    ts_error err;
    memset(&err, 0, sizeof err);
    if (ts_model_map_features(m, names, n + 1, &err) != TS_OK) fuzz_die("mapping to its own names failed", &err);
    fuzz_check_model(m);
    /* the old names were freed: take the model's new ones (its copies of `names`) */
    for (uint32_t i = 0; i <= n; i++) names[i] = m->feature_names[i];
    /* without names[0] this fails (TS_ERR_SHAPE) when a split uses it, else succeeds */
    ts_status st = ts_model_map_features(m, names + 1, n, &err);
    if (st != TS_OK && (st != TS_ERR_SHAPE || err.message[0] == '\0')) fuzz_die("bad failure of a mapping", &err);
    fuzz_check_model(m);
    free(names);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_one_loader(tsio_load_xgboost_dump, data, size);
    ts_model *m = NULL;
    ts_error err;
    char *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    if (size) memcpy(buf, data, size);
    if (tsio_load_xgboost_dump(buf, size, FUZZ_NAME, &m, &err) == TS_OK) {
        fuzz_mapping(m);
        ts_model_free(m);
    }
    free(buf);
    return 0;
}
