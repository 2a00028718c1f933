/* fuzz_quickrank_xml.c: libFuzzer target for the QuickRank and RankLib XML model loaders (one XML reader, two semantics). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Loads the input as one model, with QuickRank's then RankLib's semantics (the buffer is
 * an exact-size copy, so reads past `size` are caught) and checks the error contract or
 * the loaded model's consistency; also runs the RankLib header detection on it. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    (void)tsio_is_ranklib_header((const char *)data, size);
    fuzz_one_loader(tsio_load_quickrank_xml, data, size);
    fuzz_one_loader(tsio_load_ranklib, data, size);
    return 0;
}
