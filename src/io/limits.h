/* limits.h: the input limits that are not the model's own (forest.h: TSM_MAX_*), and the test that tells "a number above a limit" (TS_ERR_LIMIT) from "not a number" (TS_ERR_PARSE). */
#ifndef TS_IO_LIMITS_H
#define TS_IO_LIMITS_H

#include <stddef.h>

/*
 * Every limit, the error it gives (TS_ERR_LIMIT, the limit named in the message) and where
 * it is enforced; docs/testing.md lists them for users:
 *   model file             TSIO_MAX_MODEL_BYTES (4 GiB): model_load.c, before reading on
 *   trees                  TSM_MAX_TREES (2^24): every loader, as trees are added
 *   leaves per tree        TSM_MAX_LEAVES (2^24; nodes per tree one fewer)
 *   features (feature id)  TSM_MAX_FEATURES (2^24): split features, declared counts
 *   outputs per row        TSM_MAX_OUTPUTS (2^16): classes, targets
 *   category sets          TSM_MAX_CATSETS (2^24)
 *   data line              TSIO_DEFAULT_MAX_LINE (1 MiB; tsio_data_options.max_line_bytes)
 *   data columns / ids     TSIO_MAX_COLS (2^24); an SVMlight feature id past the model's
 *                          features is an error naming the model's range
 * A header count above its limit (num_class, num_tree_per_iteration, num_trees, num_leaves,
 * num_feature ...) fails when it is read, before anything of that size is allocated.
 */
#define TSIO_MAX_MODEL_BYTES ((size_t)1 << 32)

/* 1 when s[0..n) is a whole decimal number (optional '+', no other sign) above hi: the
 * value is out of range rather than malformed. Reads no more than n bytes. */
static inline int tsio_int_above(const char *s, size_t n, long long hi) {
    size_t i = n > 0 && s[0] == '+';
    if (i == n) return 0;
    unsigned long long v = 0;
    int big = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        if (v > 922337203685477580ull) big = 1; /* v * 10 would pass LLONG_MAX */
        else v = v * 10 + (unsigned)(s[i] - '0');
    }
    return big || hi < 0 || v > (unsigned long long)hi;
}

#endif /* TS_IO_LIMITS_H */
