/* fuzz_onnx.c: libFuzzer target for the ONNX loader (tsio_load_onnx: the protobuf reader, the graph walk, the tree-ensemble attributes, the model builder). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Loads the input as one ONNX model (an exact-size copy, so reads past `size` are caught:
 * every varint, length and nested message must be checked) and checks the error contract
 * or the loaded model's consistency; also runs the format detection on it. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    (void)tsio_is_onnx((const char *)data, size);
    fuzz_one_loader(tsio_load_onnx, data, size);
    return 0;
}
