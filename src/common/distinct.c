/* distinct.c: sorted distinct values of small codes by a bitmap (see distinct.h). */
#include "common/distinct.h"

#include <stdlib.h>

static int cmp_u32(const void *a, const void *b) {
    const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_u64(const void *a, const void *b) {
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* v's i-th value and its store, for either width (4 or 8 bytes). */
static uint64_t get(const void *v, size_t width, size_t i) {
    return width == 4 ? ((const uint32_t *)v)[i] : ((const uint64_t *)v)[i];
}
static void put(void *v, size_t width, size_t i, uint64_t x) {
    if (width == 4) ((uint32_t *)v)[i] = (uint32_t)x;
    else ((uint64_t *)v)[i] = x;
}

/* distinct.h's two functions: values of `width` bytes. */
static size_t distinct(void *v, size_t n, size_t width) {
    uint64_t max = 0;
    for (size_t i = 0; i < n; i++) max = get(v, width, i) > max ? get(v, width, i) : max;
    size_t u = 0;
    if (max >= TS_DISTINCT_MAX) { /* sorted, repeats dropped */
        qsort(v, n, width, width == 4 ? cmp_u32 : cmp_u64);
        for (size_t i = 0; i < n; i++)
            if (u == 0 || get(v, width, u - 1) != get(v, width, i)) put(v, width, u++, get(v, width, i));
        return u;
    }
    const size_t words = (size_t)(max / 64) + 1;
    uint64_t *bits = calloc(words, sizeof *bits);
    if (!bits) return SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        const uint64_t x = get(v, width, i);
        bits[x / 64] |= 1ull << (x % 64);
    }
    for (size_t w = 0; w < words; w++)
        for (uint64_t b = bits[w]; b; b &= b - 1) put(v, width, u++, (uint64_t)w * 64 + (uint64_t)__builtin_ctzll(b));
    free(bits);
    return u;
}

size_t ts_distinct_u32(uint32_t *v, size_t n) { return distinct(v, n, sizeof *v); }
size_t ts_distinct_u64(uint64_t *v, size_t n) { return distinct(v, n, sizeof *v); }
