/* cpu.c: x86 feature detection (cpuid + xgetbv, once), ISA levels and their names, the CPU count. */
/* sched_getaffinity and CPU_COUNT are GNU extensions; the build defines _POSIX_C_SOURCE,
 * which alone would hide them. */
#undef _POSIX_C_SOURCE
#define _GNU_SOURCE 1

#include "platform/cpu.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "platform/config.h"
#include "platform/notes.h"

#if defined(__x86_64__) || defined(__i386__)
#define TSR_X86 1
#include <cpuid.h>
#else
#define TSR_X86 0
#endif

/* Set in the cached word once detection ran, so a CPU without any feature (0) is
 * still remembered as detected. No feature bit uses it. */
#define DETECTED (1u << 31)

#if TSR_X86

/* XCR0 bits: which register state the OS saves on a context switch. */
#define XCR0_SSE    (1u << 1)
#define XCR0_YMM    (1u << 2)
#define XCR0_OPMASK (1u << 5)
#define XCR0_ZMM_HI256 (1u << 6)
#define XCR0_HI16_ZMM  (1u << 7)

/* Only valid when cpuid reports OSXSAVE (else xgetbv is an illegal instruction). */
static uint64_t read_xcr0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static int bit(uint32_t reg, unsigned n) {
    return (reg >> n) & 1u;
}

/* Leaf 0's vendor, leaf 1 and leaf 7 bits; the AVX family only when the OS saves YMM (and
 * ZMM) state. */
static uint32_t detect_x86(void) {
    unsigned a = 0, b = 0, c = 0, d = 0; /* gcc -O1 with sanitizers cannot see __get_cpuid fill them */
    uint32_t f = 0;
    if (__get_cpuid(0, &a, &b, &c, &d) && b == 0x756e6547u && d == 0x49656e69u && c == 0x6c65746eu)
        f |= TSR_CPU_INTEL; /* "Genu" "ineI" "ntel" */
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    if (bit(c, 20)) f |= TSR_CPU_SSE42;
    if (bit(c, 23)) f |= TSR_CPU_POPCNT;
    int ymm = 0, zmm = 0;
    if (bit(c, 27)) { /* OSXSAVE: xgetbv is usable */
        uint64_t xcr0 = read_xcr0();
        uint64_t ymm_mask = XCR0_SSE | XCR0_YMM;
        uint64_t zmm_mask = ymm_mask | XCR0_OPMASK | XCR0_ZMM_HI256 | XCR0_HI16_ZMM;
        ymm = (xcr0 & ymm_mask) == ymm_mask;
        zmm = (xcr0 & zmm_mask) == zmm_mask;
    }
    if (ymm && bit(c, 28)) f |= TSR_CPU_AVX;
    if (ymm && bit(c, 12)) f |= TSR_CPU_FMA;
    unsigned a7, b7, c7, d7;
    if (__get_cpuid_count(7, 0, &a7, &b7, &c7, &d7)) {
        if (bit(b7, 3)) f |= TSR_CPU_BMI1;
        if (bit(b7, 8)) f |= TSR_CPU_BMI2;
        if (bit(c7, 8)) f |= TSR_CPU_GFNI;
        if (ymm && bit(b7, 5)) f |= TSR_CPU_AVX2;
        if (zmm) {
            if (bit(b7, 16)) f |= TSR_CPU_AVX512F;
            if (bit(b7, 17)) f |= TSR_CPU_AVX512DQ;
            if (bit(b7, 28)) f |= TSR_CPU_AVX512CD;
            if (bit(b7, 30)) f |= TSR_CPU_AVX512BW;
            if (bit(b7, 31)) f |= TSR_CPU_AVX512VL;
            if (bit(c7, 1)) f |= TSR_CPU_AVX512VBMI;
            if (bit(c7, 6)) f |= TSR_CPU_AVX512VBMI2;
            if (bit(c7, 14)) f |= TSR_CPU_VPOPCNTDQ;
        }
    }
    if (__get_cpuid(0x80000001u, &a, &b, &c, &d) && bit(c, 5)) f |= TSR_CPU_LZCNT;
    return f;
}

#else

static uint32_t detect_x86(void) {
    return 0;
}

#endif /* TSR_X86 */

/* Detection is idempotent, so two threads racing on the first call both store the same
 * word: no lock is needed. */
uint32_t tsr_cpu_features(void) {
    static _Atomic uint32_t cached = 0;
    uint32_t v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (!(v & DETECTED)) {
        v = detect_x86() | DETECTED;
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return v & ~DETECTED;
}

static int has_all(uint32_t features, uint32_t want) {
    return (features & want) == want;
}

ts_isa tsr_isa_of_features(uint32_t features) {
    const uint32_t sse42 = TSR_CPU_SSE42 | TSR_CPU_POPCNT;
    const uint32_t avx2 =
        sse42 | TSR_CPU_AVX | TSR_CPU_AVX2 | TSR_CPU_BMI1 | TSR_CPU_BMI2 | TSR_CPU_LZCNT | TSR_CPU_FMA;
    const uint32_t avx512 =
        avx2 | TSR_CPU_AVX512F | TSR_CPU_AVX512BW | TSR_CPU_AVX512DQ | TSR_CPU_AVX512VL | TSR_CPU_AVX512CD;
    if (has_all(features, avx512)) return TS_ISA_AVX512;
    if (has_all(features, avx2)) return TS_ISA_AVX2;
    if (has_all(features, sse42)) return TS_ISA_SSE42;
    return TS_ISA_SCALAR;
}

static const char *const isa_names[TS_ISA_COUNT] = {"auto", "scalar", "sse4.2", "avx2", "avx512"};

const char *ts_isa_name(ts_isa isa) {
    if ((unsigned)isa >= TS_ISA_COUNT) return "unknown";
    return isa_names[isa];
}

ts_status ts_isa_from_name(const char *name, ts_isa *out) {
    static const struct { const char *name; ts_isa isa; } names[] = {
        {"auto", TS_ISA_AUTO},   {"scalar", TS_ISA_SCALAR}, {"sse4.2", TS_ISA_SSE42}, {"sse42", TS_ISA_SSE42},
        {"avx2", TS_ISA_AVX2},   {"avx512", TS_ISA_AVX512}, {"avx-512", TS_ISA_AVX512},
    };
    if (!name || !out) return TS_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i].name) == 0) {
            *out = names[i].isa;
            return TS_OK;
        }
    return TS_ERR_INVALID_ARGUMENT;
}

/* The cap TREESCORE_ISA puts on `best`: unset, empty or "auto" caps nothing; an unknown
 * name is ignored, with one warning note per process (even when threads race here). */
static ts_isa apply_env_cap(ts_isa best) {
    static atomic_int warned = 0;
    const char *env = tsr_config_get()->isa;
    ts_isa cap;
    if (!env || !*env) return best;
    if (ts_isa_from_name(env, &cap) != TS_OK) {
        tsr_note_once(&warned, "treescore: ignoring TREESCORE_ISA=%s (expected scalar, sse4.2, avx2 or avx512)",
                      env);
        return best;
    }
    if (cap == TS_ISA_AUTO || cap >= best) return best;
    return cap;
}

/* Cached as the level itself: TS_ISA_AUTO (0) is never a result, so 0 means "not yet". */
ts_isa ts_cpu_isa(void) {
    static atomic_int cached = 0;
    int v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v == 0) {
        v = (int)apply_env_cap(tsr_isa_of_features(tsr_cpu_features()));
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return (ts_isa)v;
}

ts_isa tsr_isa_resolve(ts_isa wanted) {
    ts_isa best = ts_cpu_isa();
    if (wanted == TS_ISA_AUTO || (unsigned)wanted > (unsigned)best) return best;
    return wanted;
}

unsigned ts_cpu_count(void) {
#if defined(__linux__) && defined(CPU_COUNT)
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n >= 1) return (unsigned)n;
    }
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n >= 1 ? (unsigned)n : 1u;
}

void tsr_cpu_brand(char out[TSR_CPU_BRAND_SIZE]) {
    memset(out, 0, TSR_CPU_BRAND_SIZE);
#if TSR_X86
    unsigned r[12], a, b, c, d;
    if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000004u) {
        for (unsigned i = 0; i < 3; i++) __get_cpuid(0x80000002u + i, &r[4 * i], &r[4 * i + 1], &r[4 * i + 2], &r[4 * i + 3]);
        memcpy(out, r, 48);
    }
#endif
    /* Trim the padding some CPUs put around the name. */
    size_t n = strlen(out), s = 0;
    while (s < n && out[s] == ' ') s++;
    while (n > s && out[n - 1] == ' ') n--;
    memmove(out, out + s, n - s);
    out[n - s] = '\0';
    if (!out[0]) snprintf(out, TSR_CPU_BRAND_SIZE, "unknown CPU");
}
