/* fuzz_csv.c: libFuzzer target for the CSV/TSV data reader (options from the first two input bytes). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Input layout: byte 0 = option bits, byte 1 = parameters, the rest is the file.
 *   bit 0 TSV (else CSV)
 *   bits 1-2 csv_header: 0 -> -1 (detect), 1 -> 0, 2 -> 1, 3 -> -1
 *   bit 3 label column = byte1 & 3 (else none)
 *   bits 4-5 chunk_rows - 1 (1..4)
 *   bit 6 max_line_bytes = 64
 *   bit 7 n_cols = 1 + (byte1 >> 2) % 8 (else 0: the file's count)
 *   byte1 bits 5-7: feature columns 0, 1, 2 read as text (text_value below)
 */

/* A text column's value: its length, after checking every byte can be read; "!" fails. */
static ts_status text_value(void *ctx, uint32_t column, const char *text, size_t len, double *value, ts_error *err) {
    volatile unsigned char sink = 0;
    (void)ctx;
    for (size_t i = 0; i < len; i++) sink ^= (unsigned char)text[i];
    (void)sink;
    if (len == 1 && text[0] == '!') {
        snprintf(err->message, sizeof err->message, "column %u: refused", column);
        err->status = TS_ERR_INVALID_ARGUMENT;
        return TS_ERR_INVALID_ARGUMENT;
    }
    *value = (double)len;
    return TS_OK;
}
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    uint8_t flags = data[0], param = data[1];
    static const int headers[4] = {-1, 0, 1, -1};
    tsio_data_options o;
    tsio_data_options_init(&o);
    o.format = (flags & 1) ? TSIO_DATA_TSV : TSIO_DATA_CSV;
    o.csv_header = headers[(flags >> 1) & 3];
    o.csv_label_column = (flags & 8) ? (int)(param & 3) : -1;
    o.chunk_rows = 1u + ((flags >> 4) & 3);
    if (flags & 0x40) o.max_line_bytes = 64;
    if (flags & 0x80) o.n_cols = 1u + (uint32_t)((param >> 2) % 8);
    unsigned char text[3] = {(unsigned char)((param >> 5) & 1), (unsigned char)((param >> 6) & 1),
                             (unsigned char)((param >> 7) & 1)};
    if (param >> 5) {
        o.text_columns = text;
        o.n_text_columns = 3;
        o.text_value = text_value;
    }
    fuzz_read_all(data + 2, size - 2, &o, 0);
    return 0;
}
