/* kernels.h: which kernels exist for which instruction set, and the rule that picks one, for every engine in one place (as libdeflate's lib/x86/ does). */
#ifndef TS_ENGINES_KERNELS_H
#define TS_ENGINES_KERNELS_H

#include "treescore.h"

/*
 * An engine with SIMD kernels has one generic file (src/engines/<engine>.c, built
 * without -mavx: src/common/generic.h) and one file per instruction set level,
 * src/engines/x86/<engine>_<isa>.c, built with that level's flags (the foreach list of
 * CMakeLists.txt). The generic file picks a kernel at prepare time from the level the
 * scorer resolved (tse_config.isa, at most what the CPU and OS support): the best level
 * at most that one for which the engine has a kernel. The kernels:
 *
 *   engine       scalar                     sse4.2   avx2   avx512
 *   vqs          qs's (common/qs_kernel.c)  yes      yes    yes
 *   rapid        yes (rapid_scalar.c)       -        yes    yes, two (rapid.c picks GFNI or not)
 *   trees-simd   its own scalar steps       -        yes    yes, two (tsimd.c picks the VBMI one,
 *                                                                whose top levels are byte masks, where
 *                                                                the CPU has VBMI)
 *   oblivious    yes (oblivious_scalar.c)   -        yes    yes, two (oblivious.c picks the VBMI
 *                                                                one where the CPU has VBMI); the levels
 *                                                                of rapid's quantizers, whose codes it
 *                                                                reads (coder.h)
 *   deep         its own top levels and     -        -      yes (the top levels of every tree,
 *                walk (deep.c)                                    64 documents a call, and the
 *                                                                 gathered walk: deep.h)
 *
 * Each kernel table is an engine's own type (vqs.h, rapid.h, tsimd.h), declared here
 * as an incomplete struct: this header says which exist, the engine's header what they
 * hold. Elsewhere than x86 only the scalar kernels are built.
 */

#if defined(__x86_64__) || defined(__i386__)
#define TSK_X86 1 /* the src/engines/x86/ kernels are built */
#endif

struct vqs_kernels;
struct rs_kernels;
struct tss_kernels;
struct ob_kernels;
struct deep_kernels;

extern const struct rs_kernels tse_rapid_scalar;
extern const struct ob_kernels tse_oblivious_scalar;
#ifdef TSK_X86
extern const struct vqs_kernels tse_vqs_sse42, tse_vqs_avx2, tse_vqs_avx512;
extern const struct rs_kernels tse_rapid_avx2, tse_rapid_avx512, tse_rapid_avx512gf;
extern const struct tss_kernels tse_tsimd_avx2, tse_tsimd_avx512, tse_tsimd_avx512vbmi;
extern const struct ob_kernels tse_oblivious_avx2, tse_oblivious_avx512, tse_oblivious_avx512vbmi;
extern const struct deep_kernels tse_deep_avx512;
#endif

/* vqs's kernels of the best level at most isa; NULL: none (the scalar qs kernel). */
static inline const struct vqs_kernels *tsk_vqs(ts_isa isa) {
#ifdef TSK_X86
    if (isa >= TS_ISA_AVX512) return &tse_vqs_avx512;
    if (isa >= TS_ISA_AVX2) return &tse_vqs_avx2;
    if (isa >= TS_ISA_SSE42) return &tse_vqs_sse42;
#else
    (void)isa;
#endif
    return NULL;
}

/* rapid's kernels of the best level at most isa (never NULL); at AVX-512 the GFNI
 * kernel where use_gfni() says so (asked only there). */
static inline const struct rs_kernels *tsk_rapid(ts_isa isa, int (*use_gfni)(void)) {
#ifdef TSK_X86
    if (isa >= TS_ISA_AVX512) return use_gfni() ? &tse_rapid_avx512gf : &tse_rapid_avx512;
    if (isa >= TS_ISA_AVX2) return &tse_rapid_avx2;
#else
    (void)isa;
    (void)use_gfni;
#endif
    return &tse_rapid_scalar;
}

/* trees-simd's kernels of the best level at most isa; NULL: none (its scalar steps); at
 * AVX-512 the VBMI kernels when vbmi says so. */
static inline const struct tss_kernels *tsk_tsimd(ts_isa isa, int vbmi) {
#ifdef TSK_X86
    if (isa >= TS_ISA_AVX512) return vbmi ? &tse_tsimd_avx512vbmi : &tse_tsimd_avx512;
    if (isa >= TS_ISA_AVX2) return &tse_tsimd_avx2;
#else
    (void)isa;
    (void)vbmi;
#endif
    return NULL;
}

/* oblivious's kernels of the best level at most isa (never NULL): the levels of rapid's
 * quantizers (scalar, AVX2, AVX-512), whose groups of codes it reads; at AVX-512 the VBMI
 * kernel when vbmi says so. */
static inline const struct ob_kernels *tsk_oblivious(ts_isa isa, int vbmi) {
#ifdef TSK_X86
    if (isa >= TS_ISA_AVX512) return vbmi ? &tse_oblivious_avx512vbmi : &tse_oblivious_avx512;
    if (isa >= TS_ISA_AVX2) return &tse_oblivious_avx2;
#else
    (void)isa;
    (void)vbmi;
#endif
    return &tse_oblivious_scalar;
}

/* deep's kernels (top levels, gathered walk) of the best level at most isa; NULL: none
 * (its scalar top levels and walk). */
static inline const struct deep_kernels *tsk_deep(ts_isa isa) {
#ifdef TSK_X86
    if (isa >= TS_ISA_AVX512) return &tse_deep_avx512;
#else
    (void)isa;
#endif
    return NULL;
}

#endif /* TS_ENGINES_KERNELS_H */
