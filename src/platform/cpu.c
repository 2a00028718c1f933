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
        if (bit(b7, 29) && bit(c, 9) && bit(c, 19)) f |= TSR_CPU_SHA; /* with SSSE3, SSE4.1 */
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

/* ---- the CPU count: affinity mask and cgroup CPU quota ---------------------------------- */

/* The first line of a small file, '\n' cut; 0, or -1 when it cannot be read. */
static int read_line(const char *path, char *out, size_t size) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int ok = fgets(out, (int)size, f) != NULL;
    fclose(f);
    if (!ok) return -1;
    out[strcspn(out, "\n")] = '\0';
    return 0;
}

/* CPUs a quota of `quota` us per `period` us allows, rounded up; 0 for none (no quota:
 * "max", -1, or a value that does not parse). */
static unsigned quota_cpus(const char *quota, const char *period) {
    char *e1 = NULL, *e2 = NULL;
    long long q = strtoll(quota, &e1, 10), p = strtoll(period, &e2, 10);
    if (e1 == quota || e2 == period || q <= 0 || p <= 0) return 0;
    long long n = (q + p - 1) / p;
    return n > 0 && n < 1 << 20 ? (unsigned)n : 0;
}

/* The quota of one cgroup directory (v2: cpu.max "QUOTA PERIOD"; v1: cpu.cfs_quota_us
 * and cpu.cfs_period_us); 0 for none or unreadable. */
static unsigned dir_quota(const char *dir, int v2) {
    char path[4200], a[64], b[64];
    if (v2) {
        snprintf(path, sizeof path, "%s/cpu.max", dir);
        if (read_line(path, a, sizeof a) != 0) return 0;
        char *sp = strchr(a, ' ');
        if (!sp) return 0;
        *sp = '\0';
        return quota_cpus(a, sp + 1);
    }
    snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", dir);
    if (read_line(path, a, sizeof a) != 0) return 0;
    snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dir);
    if (read_line(path, b, sizeof b) != 0) return 0;
    return quota_cpus(a, b);
}

/* The smallest quota of `mount`/`path` and each of its ancestors up to `mount` (a parent's
 * quota binds its children); 0 for none. */
static unsigned tree_quota(const char *mount, const char *path, int v2) {
    char dir[4096];
    int n = snprintf(dir, sizeof dir, "%s%s", mount, strcmp(path, "/") ? path : "");
    if (n < 0 || (size_t)n >= sizeof dir) return 0;
    unsigned best = 0;
    for (size_t root = strlen(mount);;) {
        unsigned q = dir_quota(dir, v2);
        if (q && (!best || q < best)) best = q;
        char *slash = strrchr(dir, '/');
        if (!slash || (size_t)(slash - dir) < root) break;
        *slash = '\0';
    }
    return best;
}

/* 1 when the comma-separated list `ctrl` names the "cpu" controller (v1: "cpu,cpuacct"). */
static int names_cpu(const char *ctrl) {
    for (const char *p = ctrl; *p;) {
        size_t len = strcspn(p, ",");
        if (len == 3 && !strncmp(p, "cpu", 3)) return 1;
        p += len + (p[len] == ',');
    }
    return 0;
}

/* The quota of one line of /proc/self/cgroup ("ID:CONTROLLERS:PATH"); 0 for none. In a
 * container the path may be the host's, not mounted there: then the mount's own. */
static unsigned line_quota(const char *sys_cgroup, char *line) {
    char mount[4200];
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2) return 0;
    *c2 = '\0';
    const char *ctrl = c1 + 1, *path = c2 + 1;
    int v2 = c1 == line + 1 && line[0] == '0' && !*ctrl;
    if (!v2 && !names_cpu(ctrl)) return 0;
    for (int i = 0; i < 2; i++) { /* v1: the controllers' own mount, then plain "cpu" */
        if (v2) snprintf(mount, sizeof mount, "%s", sys_cgroup);
        else snprintf(mount, sizeof mount, "%s/%s", sys_cgroup, i ? "cpu" : ctrl);
        unsigned q = path[0] == '/' ? tree_quota(mount, path, v2) : 0;
        if (!q) q = dir_quota(mount, v2);
        if (q || v2) return q;
    }
    return 0;
}

unsigned tsr_cgroup_cpus(const char *sys_cgroup, const char *proc_self_cgroup) {
    FILE *f = fopen(proc_self_cgroup, "r");
    char line[4096];
    unsigned best = 0;
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        unsigned q = line_quota(sys_cgroup, line);
        if (q && (!best || q < best)) best = q;
    }
    if (f) fclose(f);
    return best;
}

/* The cgroup quota of this process, read once (0: none; Linux only). */
static unsigned cgroup_cpus(void) {
#if defined(__linux__)
    static atomic_uint cached; /* quota + 1 once read */
    unsigned c = atomic_load(&cached);
    if (!c) {
        c = tsr_cgroup_cpus("/sys/fs/cgroup", "/proc/self/cgroup") + 1;
        atomic_store(&cached, c);
    }
    return c - 1;
#else
    return 0;
#endif
}

unsigned ts_cpu_count(void) {
    unsigned n = 0;
#if defined(__linux__) && defined(CPU_COUNT)
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) >= 1) n = (unsigned)CPU_COUNT(&set);
#endif
    if (!n) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n = c >= 1 ? (unsigned)c : 1u;
    }
    unsigned quota = cgroup_cpus(); /* a container's --cpus: more threads would be throttled */
    return quota && quota < n ? quota : n;
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
