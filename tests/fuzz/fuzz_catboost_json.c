/* fuzz_catboost_json.c: libFuzzer target for the CatBoost JSON model loader (tsio_load_catboost_json: save_model(format="json")). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Loads the input as one CatBoost JSON model (the buffer is an exact-size copy, so reads
 * past `size` are caught) and checks the error contract or the loaded model's
 * consistency; also runs the format detection on it (it must never read past `size`
 * either). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    (void)tsio_is_catboost_json((const char *)data, size);
    fuzz_one_loader(tsio_load_catboost_json, data, size);
    return 0;
}
