/* fuzz_lightgbm.c: libFuzzer target for the LightGBM text model loader (tsio_load_lightgbm). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Loads the input as one model (the buffer is an exact-size copy, so reads past `size`
 * are caught) and checks the error contract or the loaded model's consistency. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_one_loader(tsio_load_lightgbm, data, size);
    return 0;
}
