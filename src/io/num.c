/* num.c: the one decimal number parser of io/: an exact fast path, then strtof/strtod under the "C" locale. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strtod_l, strtof_l (glibc, musl) */
#endif

#include "io/num.h"

#include <float.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A decimal token split into sign, up to 19 significant digits and a power of ten. */
typedef struct tsio_decimal {
    int neg;
    uint64_t m;     /* significant digits (exact when !inexact) */
    long exp10;     /* value = m * 10^exp10 */
    int inexact;    /* digits were dropped: only strtof/strtod may round it */
} tsio_decimal;

/* ---- Scanning ------------------------------------------------------------------------- */

static int ascii_lower(int c) { return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c; }

static int same_ci(const char *s, size_t n, const char *word) {
    size_t i;
    for (i = 0; i < n; i++)
        if (word[i] == '\0' || ascii_lower((unsigned char)s[i]) != word[i]) return 0;
    return word[n] == '\0';
}

/* 1 nan, 2 inf (sign in *neg), 0 neither. */
static int special_value(const char *s, size_t n, int *neg) {
    *neg = 0;
    if (n > 0 && (s[0] == '+' || s[0] == '-')) {
        *neg = s[0] == '-';
        s++;
        n--;
    }
    if (same_ci(s, n, "nan")) return 1;
    if (same_ci(s, n, "inf") || same_ci(s, n, "infinity")) return 2;
    return 0;
}

static int is_digit(char c) { return (unsigned)(c - '0') < 10u; }

/* Parse [+-]digits[.digits][(e|E)[+-]digits] (digits on at least one side of '.'). */
static int scan_decimal(const char *s, size_t n, tsio_decimal *d) {
    size_t i = 0, digits = 0;
    int sig = 0;
    long ex = 0;
    memset(d, 0, sizeof *d);
    if (i < n && (s[i] == '+' || s[i] == '-')) d->neg = s[i++] == '-';
    for (; i < n && is_digit(s[i]); i++, digits++) {
        unsigned v = (unsigned)(s[i] - '0');
        if (d->m == 0 && v == 0) continue;
        if (sig < 19) {
            d->m = d->m * 10 + v;
            sig++;
        } else {
            d->inexact = 1;
            d->exp10++;
        }
    }
    if (i < n && s[i] == '.') {
        for (i++; i < n && is_digit(s[i]); i++, digits++) {
            unsigned v = (unsigned)(s[i] - '0');
            if (d->m == 0 && v == 0) {
                d->exp10--;
            } else if (sig < 19) {
                d->m = d->m * 10 + v;
                sig++;
                d->exp10--;
            } else {
                d->inexact = 1;
            }
        }
    }
    if (digits == 0) return 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        int eneg = 0;
        size_t e0;
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) eneg = s[i++] == '-';
        for (e0 = i; i < n && is_digit(s[i]); i++)
            if (ex < 100000000L) ex = ex * 10 + (s[i] - '0');
        if (i == e0) return 0;
        d->exp10 += eneg ? -ex : ex;
    }
    return i == n;
}

/* The common case quickly: [+-]digits[.digits][e[+-]digits] with at most 19 digits in
 * all, starting at s. Returns the end of that prefix, or NULL when it does not apply
 * (the callers then fall back to scan_decimal on the whole token). */
static const char *scan_short_decimal(const char *p, const char *e, tsio_decimal *d) {
    /* locals, not d's fields: stores to *d could alias the char reads and stay in memory */
    const char *d0, *f0;
    uint64_t m = 0;
    long exp10 = 0;
    int neg = 0;
    size_t nd;
    d->inexact = 0;
    if (p < e && (*p == '-' || *p == '+')) neg = *p++ == '-';
    for (d0 = p; p < e && is_digit(*p); p++) m = m * 10 + (uint64_t)(*p - '0');
    nd = (size_t)(p - d0);
    if (p < e && *p == '.') {
        for (f0 = ++p; p < e && is_digit(*p); p++) m = m * 10 + (uint64_t)(*p - '0');
        nd += (size_t)(p - f0);
        exp10 = -(long)(p - f0);
    }
    d->neg = neg;
    d->m = m;
    d->exp10 = exp10;
    if (nd == 0 || nd > 19) return NULL;
    if (p < e && (*p == 'e' || *p == 'E')) {
        long ex = 0;
        int eneg = 0;
        const char *e0;
        p++;
        if (p < e && (*p == '+' || *p == '-')) eneg = *p++ == '-';
        for (e0 = p; p < e && is_digit(*p); p++)
            if (ex < 100000000L) ex = ex * 10 + (*p - '0');
        if (p == e0) return NULL;
        d->exp10 += eneg ? -ex : ex;
    }
    return p;
}

/* ---- Exact fast path ------------------------------------------------------------------ */

static const float f32_pow10[] = {1e0f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f, 1e6f, 1e7f, 1e8f, 1e9f, 1e10f};
static const double f64_pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                   1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Clinger's fast path is exact only when float/double arithmetic is not done in wider
 * precision: m and 10^k are both exact, so one IEEE multiply/divide rounds once. */
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
#define TSIO_FAST_PATH 1
#else
#define TSIO_FAST_PATH 0
#endif

static void strip_zeros(tsio_decimal *d) {
    while (d->m != 0 && d->m % 10 == 0) {
        d->m /= 10;
        d->exp10++;
    }
}

/* Fast exact float: m <= 2^24 and |exp10| <= 10. Returns 1 when it applied. */
static int fast_f32(tsio_decimal *d, float *out) {
    float v;
    if (!TSIO_FAST_PATH || d->inexact) return 0;
    if (d->m == 0) {
        *out = d->neg ? -0.0f : 0.0f;
        return 1;
    }
    if (d->m > (1u << 24)) strip_zeros(d);
    if (d->m > (1u << 24) || d->exp10 < -10 || d->exp10 > 10) return 0;
    v = (float)d->m;
    v = d->exp10 < 0 ? v / f32_pow10[-d->exp10] : v * f32_pow10[d->exp10];
    *out = d->neg ? -v : v;
    return 1;
}

static int fast_f64(tsio_decimal *d, double *out) {
    double v;
    if (!TSIO_FAST_PATH || d->inexact) return 0;
    if (d->m == 0) {
        *out = d->neg ? -0.0 : 0.0;
        return 1;
    }
    if (d->m > ((uint64_t)1 << 53)) strip_zeros(d);
    if (d->m > ((uint64_t)1 << 53) || d->exp10 < -22 || d->exp10 > 22) return 0;
    v = (double)d->m;
    v = d->exp10 < 0 ? v / f64_pow10[-d->exp10] : v * f64_pow10[d->exp10];
    *out = d->neg ? -v : v;
    return 1;
}

/* ---- Slow path: strtof/strtod under the "C" numeric locale ----------------------------- */

/* The "C" LC_NUMERIC locale, made once per process and never freed; (locale_t)0 when
 * newlocale failed (then strtod runs in the caller's locale, as it would anyway). */
static locale_t c_numeric;
static pthread_once_t c_numeric_once = PTHREAD_ONCE_INIT;

static void make_c_numeric(void) { c_numeric = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0); }

#if defined(__GLIBC__)
/* strtof / strtod of the NUL-terminated s in the "C" locale; 0 when all of it was read. */
static int c_strtof(const char *s, size_t n, float *out) {
    char *end;
    pthread_once(&c_numeric_once, make_c_numeric);
    *out = c_numeric ? strtof_l(s, &end, c_numeric) : strtof(s, &end);
    return end == s + n ? 0 : -1;
}

static int c_strtod(const char *s, size_t n, double *out) {
    char *end;
    pthread_once(&c_numeric_once, make_c_numeric);
    *out = c_numeric ? strtod_l(s, &end, c_numeric) : strtod(s, &end);
    return end == s + n ? 0 : -1;
}
#else
/* Without strtod_l: switch this thread to the "C" numeric locale around the call. */
static locale_t enter_c_numeric(void) {
    pthread_once(&c_numeric_once, make_c_numeric);
    return c_numeric ? uselocale(c_numeric) : (locale_t)0;
}

static void leave_c_numeric(locale_t previous) {
    if (c_numeric) uselocale(previous);
}

static int c_strtof(const char *s, size_t n, float *out) {
    char *end;
    locale_t previous = enter_c_numeric();
    *out = strtof(s, &end);
    leave_c_numeric(previous);
    return end == s + n ? 0 : -1;
}

static int c_strtod(const char *s, size_t n, double *out) {
    char *end;
    locale_t previous = enter_c_numeric();
    *out = strtod(s, &end);
    leave_c_numeric(previous);
    return end == s + n ? 0 : -1;
}
#endif

/* ---- Data reader form ----------------------------------------------------------------- */

/* nan / inf / bad for a token scan_decimal refused. */
static int special_f32(const char *s, size_t n, float *out) {
    int neg, kind = special_value(s, n, &neg);
    if (kind == 0) return TSIO_NUM_BAD;
    *out = kind == 1 ? NAN : neg ? -INFINITY : INFINITY;
    return TSIO_NUM_OK;
}

static int special_f64(const char *s, size_t n, double *out) {
    int neg, kind = special_value(s, n, &neg);
    if (kind == 0) return TSIO_NUM_BAD;
    *out = kind == 1 ? (double)NAN : neg ? -(double)INFINITY : (double)INFINITY;
    return TSIO_NUM_OK;
}

int tsio_parse_f32(char *s, size_t n, float *out) {
    tsio_decimal d;
    char save;
    int bad;
    if (scan_short_decimal(s, s + n, &d) == s + n) { /* valid, at most 19 digits */
        if (fast_f32(&d, out)) return TSIO_NUM_OK;
    } else {
        if (!scan_decimal(s, n, &d)) return special_f32(s, n, out);
        if (fast_f32(&d, out)) return TSIO_NUM_OK;
    }
    save = s[n];
    s[n] = '\0';
    bad = c_strtof(s, n, out);
    s[n] = save;
    if (bad) return TSIO_NUM_BAD;
    return isinf(*out) ? TSIO_NUM_RANGE : TSIO_NUM_OK;
}

int tsio_parse_f64(char *s, size_t n, double *out) {
    tsio_decimal d;
    char save;
    int bad;
    if (scan_short_decimal(s, s + n, &d) == s + n) { /* valid, at most 19 digits */
        if (fast_f64(&d, out)) return TSIO_NUM_OK;
    } else {
        if (!scan_decimal(s, n, &d)) return special_f64(s, n, out);
        if (fast_f64(&d, out)) return TSIO_NUM_OK;
    }
    save = s[n];
    s[n] = '\0';
    bad = c_strtod(s, n, out);
    s[n] = save;
    if (bad) return TSIO_NUM_BAD;
    return isinf(*out) ? TSIO_NUM_RANGE : TSIO_NUM_OK;
}

int tsio_parse_f32_field(char *s, const char *e, float *out, char **end) {
    tsio_decimal d;
    const char *p = scan_short_decimal(s, e, &d);
    char *t;
    if (p && (p == e || *p == ' ' || *p == '\t') && fast_f32(&d, out)) {
        *end = s + (p - s);
        return TSIO_NUM_OK;
    }
    for (t = s; t < e && *t != ' ' && *t != '\t'; t++) continue;
    *end = t;
    return tsio_parse_f32(s, (size_t)(t - s), out);
}

int tsio_parse_f64_field(char *s, const char *e, double *out, char **end) {
    tsio_decimal d;
    const char *p = scan_short_decimal(s, e, &d);
    char *t;
    if (p && (p == e || *p == ' ' || *p == '\t') && fast_f64(&d, out)) {
        *end = s + (p - s);
        return TSIO_NUM_OK;
    }
    for (t = s; t < e && *t != ' ' && *t != '\t'; t++) continue;
    *end = t;
    return tsio_parse_f64(s, (size_t)(t - s), out);
}

/* ---- Model loader form ---------------------------------------------------------------- */

/* Copy a token of at most TSIO_NUMBER_MAX bytes into buf (s[n] writable there). */
static int copy_token(const char *s, size_t n, char buf[TSIO_NUMBER_MAX + 1]) {
    if (n == 0 || n > TSIO_NUMBER_MAX) return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    return 0;
}

int tsio_parse_double(const char *s, size_t n, double *out) {
    char buf[TSIO_NUMBER_MAX + 1];
    double v;
    if (copy_token(s, n, buf) != 0 || tsio_parse_f64(buf, n, &v) == TSIO_NUM_BAD) return -1;
    *out = isnan(v) && s[0] == '-' ? -v : v; /* strtod keeps the sign of "-nan" */
    return 0;
}

int tsio_parse_float(const char *s, size_t n, float *out) {
    char buf[TSIO_NUMBER_MAX + 1];
    float v;
    if (copy_token(s, n, buf) != 0 || tsio_parse_f32(buf, n, &v) == TSIO_NUM_BAD) return -1;
    *out = isnan(v) && s[0] == '-' ? -v : v;
    return 0;
}

int tsio_parse_int(const char *s, size_t n, long long lo, long long hi, long long *out) {
    size_t i = 0;
    int neg = 0;
    unsigned long long v = 0;
    if (n > 0 && (s[0] == '+' || s[0] == '-')) {
        neg = s[0] == '-';
        i = 1;
    }
    if (i == n) return -1;
    if (n - i > 18) return -1; /* 18 digits fit a long long; no bound used here is larger */
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    long long x = neg ? -(long long)v : (long long)v;
    if (x < lo || x > hi) return -1;
    *out = x;
    return 0;
}
