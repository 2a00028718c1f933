/* fuzz_catboost_cbm.c: libFuzzer target for the CatBoost binary model loader (tsio_load_catboost: "CBM1", a size, FlatBuffers). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Loads the input as one .cbm model (the buffer is an exact-size copy, so reads past
 * `size` are caught: every FlatBuffers offset, vtable and vector length must be checked)
 * and checks the error contract or the loaded model's consistency; also runs the format
 * detection on it. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    (void)tsio_is_catboost_cbm((const char *)data, size);
    fuzz_one_loader(tsio_load_catboost, data, size);
    return 0;
}
