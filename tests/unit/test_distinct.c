/* test_distinct.c: common/distinct.h against a sort and a pass that drops repeats, for both widths and both paths (bitmap, sort). */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "common/distinct.h"

static uint64_t rnd(uint64_t *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

static int cmp64(const void *a, const void *b) {
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The reference: sorted, repeats dropped; returns the count. */
static size_t reference(uint64_t *v, size_t n) {
    qsort(v, n, sizeof *v, cmp64);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || v[u - 1] != v[i]) v[u++] = v[i];
    return u;
}

/* n values below `range` (plus `big` when not 0: one value past the bitmap's bound),
 * through both widths, against the reference. */
static void one_case(uint64_t *seed, size_t n, uint64_t range, uint64_t big) {
    uint64_t *ref = malloc((n + 1) * sizeof *ref), *v64 = malloc((n + 1) * sizeof *v64);
    uint32_t *v32 = malloc((n + 1) * sizeof *v32);
    for (size_t i = 0; i < n; i++) ref[i] = v64[i] = v32[i] = (uint32_t)(rnd(seed) % range);
    if (big && n) ref[n / 2] = v64[n / 2] = v32[n / 2] = (uint32_t)big;
    const size_t u = reference(ref, n), u32 = ts_distinct_u32(v32, n), u64 = ts_distinct_u64(v64, n);
    CHECK_MSG(u32 == u && u64 == u, "n %zu range %llu: %zu and %zu distinct, expected %zu", n,
              (unsigned long long)range, u32, u64, u);
    int same = 1;
    for (size_t i = 0; i < u && u32 == u && u64 == u; i++) same &= v32[i] == ref[i] && v64[i] == ref[i];
    CHECK_MSG(same, "n %zu range %llu: the values differ", n, (unsigned long long)range);
    free(ref), free(v64), free(v32);
}

static void test_distinct(void) {
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    static const size_t ns[] = {0, 1, 2, 63, 64, 65, 1000, 100000};
    static const uint64_t ranges[] = {1, 2, 64, 65, 544, 100000, 1u << 26};
    for (size_t a = 0; a < sizeof ns / sizeof *ns; a++)
        for (size_t b = 0; b < sizeof ranges / sizeof *ranges; b++) {
            one_case(&seed, ns[a], ranges[b], 0);
            one_case(&seed, ns[a], ranges[b], TS_DISTINCT_MAX - 1); /* the largest the bitmap takes */
            one_case(&seed, ns[a], ranges[b], TS_DISTINCT_MAX);     /* sorted instead */
            one_case(&seed, ns[a], ranges[b], UINT32_MAX);
        }
    uint64_t wide[] = {(uint64_t)1 << 40, 3, (uint64_t)1 << 40, 3, 0}; /* a 64-bit value: sorted */
    CHECK(ts_distinct_u64(wide, 5) == 3 && wide[0] == 0 && wide[1] == 3 && wide[2] == (uint64_t)1 << 40);
}

int main(void) {
    RUN_TEST(test_distinct);
    return check_summary("test_distinct");
}
