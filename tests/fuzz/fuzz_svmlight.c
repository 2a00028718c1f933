/* fuzz_svmlight.c: libFuzzer target for the SVMlight/LETOR data reader (options and query file from the input). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Input layout: byte 0 = option bits, byte 1 = n_cols - 1, and when bit 6 is set,
 * byte 2 = length L of a query file made of the next L bytes; the rest is the data file.
 *   bit 0 strict_cols   bit 1 one_based   bit 2 absent value NaN (else 0)
 *   bits 3-4 chunk_rows - 1 (1..4, so chunk boundaries fall everywhere)
 *   bit 5 max_line_bytes = 64 (exercises the line limit)   bit 6 query file
 *   bit 7 format AUTO (sniffed) instead of SVMLIGHT
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    uint8_t flags = data[0];
    tsio_data_options o;
    tsio_data_options_init(&o);
    o.format = (flags & 0x80) ? TSIO_DATA_AUTO : TSIO_DATA_SVMLIGHT;
    o.n_cols = 1u + data[1];
    o.strict_cols = flags & 1;
    o.one_based = (flags >> 1) & 1;
    o.absent_value = (flags & 4) ? NAN : 0.0f;
    o.chunk_rows = 1u + ((flags >> 3) & 3);
    if (flags & 0x20) o.max_line_bytes = 64;
    data += 2;
    size -= 2;
    char qpath[64];
    fuzz_query_lines_ = 0;
    if ((flags & 0x40) && size >= 1) {
        size_t qlen = data[0];
        data++;
        size--;
        if (qlen > size) qlen = size;
        o.query_file = fuzz_query_file(data, qlen, qpath, sizeof qpath);
        data += qlen;
        size -= qlen;
    }
    fuzz_read_all(data, size, &o, 0);
    return 0;
}
