/* fuzz_wisdom.c: libFuzzer target for the planner's wisdom file: line validation and compaction (src/scorer/wisdom.c). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scorer/wisdom.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * The input is a wisdom file's text (what tsr_read_trusted hands the planner: the file's
 * bytes, NUL-terminated; an embedded NUL ends the text as it does there). Contracts:
 *   - compaction writes at most strlen(text) bytes and leaves the text as it was;
 *   - what it writes is whole '\n'-ended lines, each valid (tsp_wisdom_line_valid: it
 *     parses and its engine is in its candidate set), each a line of the input, in the
 *     input's order;
 *   - compacting the result again changes nothing (one line per key is left).
 */

static void die(const char *what) {
    fprintf(stderr, "fuzz contract violation: %s\n", what);
    abort();
}

/* 1 when line (len bytes, '\n' included) is valid. */
static int line_valid(const char *line, size_t len) {
    char tmp[1024];
    if (len >= sizeof tmp) {
        char *big = malloc(len + 1);
        if (!big) return 1;
        memcpy(big, line, len);
        big[len] = '\0';
        int v = tsp_wisdom_line_valid(big);
        free(big);
        return v;
    }
    memcpy(tmp, line, len);
    tmp[len] = '\0';
    return tsp_wisdom_line_valid(tmp);
}

/* Checks that out (n bytes) is whole valid lines, each a line of text in order. */
static void check_lines(const char *text, const char *out, size_t n) {
    const char *in = text;
    for (size_t i = 0; i < n;) {
        const char *nl = memchr(out + i, '\n', n - i);
        if (!nl) die("compaction wrote a line without its '\\n'");
        size_t len = (size_t)(nl - (out + i)) + 1;
        if (memchr(out + i, '\0', len)) die("compaction wrote a NUL");
        if (!line_valid(out + i, len)) die("compaction kept a line that is not valid");
        /* find the same line further on in the input (at a line start) */
        for (;;) {
            if (!*in) die("compaction wrote a line that is not in the input (or out of order)");
            const char *end = strchr(in, '\n');
            size_t l = end ? (size_t)(end - in) + 1 : strlen(in);
            const char *here = in;
            in += l;
            if (l == len && memcmp(here, out + i, len) == 0) break;
        }
        i += len;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1), *copy = malloc(size + 1), *out = malloc(size + 1);
    char *again = malloc(size + 1);
    if (!text || !copy || !out || !again) goto done;
    memcpy(text, data, size);
    text[size] = '\0';
    memcpy(copy, text, size + 1);
    size_t n = tsp_wisdom_compact_text(text, out);
    if (n == (size_t)-1) goto done; /* out of memory */
    if (memcmp(text, copy, size + 1) != 0) die("compaction changed its input");
    if (n > strlen(text)) die("compaction wrote more than its input");
    check_lines(text, out, n);
    out[n] = '\0';
    memcpy(copy, out, n + 1);
    size_t m = tsp_wisdom_compact_text(out, again);
    if (m == (size_t)-1) goto done;
    if (m != n || memcmp(again, copy, n) != 0) die("compacting a compacted file changed it");
done:
    free(text);
    free(copy);
    free(out);
    free(again);
    return 0;
}
