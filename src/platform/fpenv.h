/* fpenv.h: the floating-point state every score is computed under (round to nearest, no flush-to-zero, no denormals-are-zero), whatever the calling thread set; its own state back after. */
#ifndef TS_PLATFORM_FPENV_H
#define TS_PLATFORM_FPENV_H

#include <stdint.h>

/*
 * A process may run with another rounding mode, or with flush-to-zero (FTZ) and
 * denormals-are-zero (DAZ) on: a library built with -ffast-math sets both when it is
 * loaded. Under another rounding mode the sums of leaf values change (test_f64
 * test_caller_fp_state); under DAZ a float input below 2^-126 compares as zero, and under
 * FTZ a double rounded to such a float becomes zero (LightGBM's rows read every |x| <=
 * 1e-35 as zero anyway; other formats' thresholds may lie there). So the public scoring
 * calls run the engines under
 * the canonical state and put the caller's back (its exception flags included), and the
 * pool's helper threads take it once when they start. x86 only (MXCSR: bits 0-5 the
 * flags, 6 DAZ, 7-12 the exception masks, 13-14 the rounding control, 15 FTZ); a no-op
 * elsewhere. The common case, a caller already in that state, costs one stmxcsr.
 */
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>

enum {
    TSR_MXCSR_FLAGS = 0x003Fu,   /* the exception flags */
    TSR_MXCSR_MODE = 0xFFC0u,    /* DAZ, the masks, the rounding control, FTZ */
    TSR_MXCSR_CANON = 0x1F80u,   /* every exception masked, to nearest, FTZ and DAZ off */
    TSR_MXCSR_ROUND_UP = 0x4000u /* the rounding control's toward +inf */
};

/* The canonical state on this thread; returns the state to give back to tsr_fpenv_leave. */
static inline uint32_t tsr_fpenv_enter(void) {
    const uint32_t old = _mm_getcsr();
    if ((old & TSR_MXCSR_MODE) != TSR_MXCSR_CANON) _mm_setcsr((old & ~(uint32_t)TSR_MXCSR_MODE) | TSR_MXCSR_CANON);
    return old;
}

static inline void tsr_fpenv_leave(uint32_t old) {
    if ((old & TSR_MXCSR_MODE) != TSR_MXCSR_CANON) _mm_setcsr(old);
}
#else
static inline uint32_t tsr_fpenv_enter(void) { return 0; }
static inline void tsr_fpenv_leave(uint32_t old) { (void)old; }
#endif

#endif
