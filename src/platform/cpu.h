/* cpu.h: CPU feature detection (once, cpuid + xgetbv) and the ISA level the engines may use. */
#ifndef TS_PLATFORM_CPU_H
#define TS_PLATFORM_CPU_H

#include <stdint.h>

#include "treescore.h"

#include "common/generic.h"

/* Feature bits, as detected (before the TREESCORE_ISA cap). */
#define TSR_CPU_SSE42      (1u << 0)
#define TSR_CPU_POPCNT     (1u << 1)
#define TSR_CPU_AVX        (1u << 2)
#define TSR_CPU_AVX2       (1u << 3)
#define TSR_CPU_BMI1       (1u << 4)
#define TSR_CPU_BMI2       (1u << 5)
#define TSR_CPU_FMA        (1u << 6)
#define TSR_CPU_AVX512F    (1u << 7)
#define TSR_CPU_AVX512BW   (1u << 8)
#define TSR_CPU_AVX512DQ   (1u << 9)
#define TSR_CPU_AVX512VL   (1u << 10)
#define TSR_CPU_AVX512CD   (1u << 11)
#define TSR_CPU_VPOPCNTDQ  (1u << 12)
#define TSR_CPU_AVX512VBMI2 (1u << 13)
#define TSR_CPU_LZCNT      (1u << 14)
#define TSR_CPU_GFNI       (1u << 15) /* GF2P8AFFINEQB and friends (EVEX forms with AVX-512) */
/* Not a feature: the vendor is Intel ("GenuineIntel"). Kernels read it to pick between
 * equivalent instruction sequences whose speed differs between Intel and AMD cores
 * (rapid's GFNI update, src/engines/rapid.c). */
#define TSR_CPU_INTEL      (1u << 16)
#define TSR_CPU_AVX512VBMI (1u << 17) /* VPERMB, VPERMI2B (with the ZMM state) */
/* Not an ISA level's: the SHA extensions (SHA256RNDS2 ...) and SSSE3/SSE4.1, which the
 * SHA-256 of ifelse's cache keys uses (model/hash.h tsm_sha256_init_ni). */
#define TSR_CPU_SHA        (1u << 18)

/* What the CPU and OS support (OS: XCR0 enables the YMM / ZMM state), detected on the
 * first call and cached; thread-safe. 0 on other architectures. */
uint32_t tsr_cpu_features(void);

/* The level these features reach: SSE42 needs SSE4.2 + POPCNT; AVX2 needs AVX, AVX2,
 * BMI1, BMI2, LZCNT, FMA; AVX512 needs F, BW, DQ, VL and CD on top (VPOPCNTDQ and
 * VBMI2 are reported but not required: Skylake-X lacks them). */
ts_isa tsr_isa_of_features(uint32_t features);

/* ts_cpu_isa(): tsr_isa_of_features(tsr_cpu_features()), lowered to TREESCORE_ISA when
 * that variable names a lower level (a higher one is ignored; an unknown name is
 * ignored with one warning note, see notes.h). Cached after the first call. */

/* The level a scorer uses when asked for `wanted` (TS_ISA_AUTO = the best). */
ts_isa tsr_isa_resolve(ts_isa wanted);

/* CPUs the cgroup CPU quota of the process allows (rounded up; the smallest of its
 * cgroup's and its ancestors'), from `proc_self_cgroup` ("/proc/self/cgroup") and the
 * hierarchy mounted at `sys_cgroup` ("/sys/fs/cgroup"): v2 cpu.max, v1 cpu.cfs_quota_us
 * over cpu.cfs_period_us; 0 when there is none. ts_cpu_count() is at most this. */
unsigned tsr_cgroup_cpus(const char *sys_cgroup, const char *proc_self_cgroup);

/* The CPU's name as cpuid tells it ("INTEL(R) XEON(R) PLATINUM 8592+"), trimmed; "unknown
 * CPU" where there is none. */
#define TSR_CPU_BRAND_SIZE 49
void tsr_cpu_brand(char out[TSR_CPU_BRAND_SIZE]);

#endif /* TS_PLATFORM_CPU_H */
