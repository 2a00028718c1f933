/* fuzz_xgboost_ubjson.c: libFuzzer target for the UBJSON reader and the XGBoost UBJSON model loader. */
#include "fuzz_common.h"
#include "io/ubjson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The loader (which transcodes, then reads the JSON), and the transcoder alone on an
 * exact-size copy: its JSON output must be valid for the JSON reader's tokenizer, so
 * it is loaded too (any error is fine, a crash or a broken contract is not). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_one_loader(tsio_load_xgboost_ubjson, data, size);
    char *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    if (size) memcpy(buf, data, size);
    tsu_json j;
    ts_error err;
    memset(&err, 0, sizeof err);
    ts_status st = tsu_to_json(buf, size, FUZZ_NAME, &j, &err);
    free(buf);
    if (st != TS_OK) {
        fuzz_check_error(st, &err, 0);
        if (err.line != 0) fuzz_die("UBJSON errors have no line", &err);
        return 0;
    }
    fuzz_one_loader(tsio_load_xgboost_json, (const uint8_t *)j.text, j.size);
    tsu_json_free(&j);
    return 0;
}
