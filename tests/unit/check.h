/* check.h: a minimal unit-test harness: CHECK macros, a test registry by hand, a summary line. */
#ifndef TS_TESTS_CHECK_H
#define TS_TESTS_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int check_failed_ = 0, check_passed_ = 0;

#define CHECK(cond)                                                                         \
    do {                                                                                    \
        if (cond) {                                                                         \
            check_passed_++;                                                                \
        } else {                                                                            \
            check_failed_++;                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);      \
        }                                                                                   \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                \
    do {                                                                                    \
        if (cond) {                                                                         \
            check_passed_++;                                                                \
        } else {                                                                            \
            check_failed_++;                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);      \
            fprintf(stderr, __VA_ARGS__);                                                   \
            fputc('\n', stderr);                                                            \
        }                                                                                   \
    } while (0)

/* Compares two doubles bit for bit (NaN equals NaN). */
#define CHECK_SAME_DOUBLE(a, b)                                                             \
    do {                                                                                    \
        double ca_ = (a), cb_ = (b);                                                        \
        CHECK_MSG(memcmp(&ca_, &cb_, sizeof ca_) == 0, "%.17g != %.17g", ca_, cb_);         \
    } while (0)

#define CHECK_STATUS(expr, want)                                                            \
    do {                                                                                    \
        ts_status cs_ = (expr);                                                             \
        CHECK_MSG(cs_ == (want), "%s returned %s, expected %s", #expr, ts_status_name(cs_), \
                  ts_status_name(want));                                                    \
    } while (0)

#define RUN_TEST(fn)                                                                        \
    do {                                                                                    \
        int before_ = check_failed_;                                                        \
        fn();                                                                               \
        fprintf(stderr, "%-50s %s\n", #fn, check_failed_ == before_ ? "ok" : "FAILED");    \
    } while (0)

static inline int check_summary(const char *suite) {
    printf("%s: %d checks passed, %d failed\n", suite, check_passed_, check_failed_);
    return check_failed_ ? 1 : 0;
}

#endif /* TS_TESTS_CHECK_H */
