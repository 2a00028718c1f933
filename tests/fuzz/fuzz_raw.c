/* fuzz_raw.c: libFuzzer target for the raw float32 matrix reader (header parsing, truncation, chunking). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Input layout: byte 0 = option bits, the rest is the file (seeds start with a valid
 * "TSRAWF32" header).
 *   bits 0-1 chunk_rows - 1 (1..4)
 *   bit 2 n_cols = 1 + ((byte0 >> 4) & 7) (else 0: the header's count)
 *   bit 3 format AUTO (the magic is sniffed; the path has no extension)
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    uint8_t flags = data[0];
    tsio_data_options o;
    tsio_data_options_init(&o);
    o.format = (flags & 8) ? TSIO_DATA_AUTO : TSIO_DATA_RAW;
    o.chunk_rows = 1u + (flags & 3);
    if (flags & 4) o.n_cols = 1u + ((flags >> 4) & 7);
    /* AUTO on a file without the magic reads it as SVMlight, which needs n_cols. */
    if (o.format == TSIO_DATA_AUTO && o.n_cols == 0) o.n_cols = 8;
    fuzz_read_all(data + 1, size - 1, &o, 1);
    return 0;
}
