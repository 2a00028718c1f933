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

/* The bitmap of values 0 .. max (max < TS_DISTINCT_MAX), zeroed; NULL when out of memory. */
static uint64_t *new_bitmap(uint64_t max, size_t *words) {
    *words = (size_t)(max / 64) + 1;
    return calloc(*words, sizeof(uint64_t));
}

size_t ts_distinct_u32(uint32_t *v, size_t n) {
    uint32_t max = 0;
    for (size_t i = 0; i < n; i++) max = v[i] > max ? v[i] : max;
    size_t u = 0, words;
    if (max >= TS_DISTINCT_MAX) { /* sorted, repeats dropped */
        qsort(v, n, sizeof *v, cmp_u32);
        for (size_t i = 0; i < n; i++)
            if (u == 0 || v[u - 1] != v[i]) v[u++] = v[i];
        return u;
    }
    uint64_t *bits = new_bitmap(max, &words);
    if (!bits) return SIZE_MAX;
    for (size_t i = 0; i < n; i++) bits[v[i] / 64] |= 1ull << (v[i] % 64);
    for (size_t w = 0; w < words; w++)
        for (uint64_t b = bits[w]; b; b &= b - 1) v[u++] = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(b));
    free(bits);
    return u;
}

size_t ts_distinct_u64(uint64_t *v, size_t n) {
    uint64_t max = 0;
    for (size_t i = 0; i < n; i++) max = v[i] > max ? v[i] : max;
    size_t u = 0, words;
    if (max >= TS_DISTINCT_MAX) {
        qsort(v, n, sizeof *v, cmp_u64);
        for (size_t i = 0; i < n; i++)
            if (u == 0 || v[u - 1] != v[i]) v[u++] = v[i];
        return u;
    }
    uint64_t *bits = new_bitmap(max, &words);
    if (!bits) return SIZE_MAX;
    for (size_t i = 0; i < n; i++) bits[v[i] / 64] |= 1ull << (v[i] % 64);
    for (size_t w = 0; w < words; w++)
        for (uint64_t b = bits[w]; b; b &= b - 1) v[u++] = (uint64_t)w * 64 + (uint64_t)__builtin_ctzll(b);
    free(bits);
    return u;
}
