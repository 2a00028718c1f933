/* generic.h: refuses to compile generic (ISA-independent) code with -mavx or higher. */
#ifndef TS_COMMON_GENERIC_H
#define TS_COMMON_GENERIC_H

/*
 * One build of treescore runs on any x86-64: only the files under src/engines/x86/ are
 * built with -msse4.2 / -mavx2 / -mavx512*, and they define TS_ISA_FILE before any
 * include. Every other file reaches this header (through common/error.h or
 * platform/cpu.h) and refuses to compile when the whole build was given -mavx or more
 * (-march=native, CFLAGS=-mavx2, ...): the compiler could then put AVX instructions in
 * code that runs before the CPU check, and the binary would die with SIGILL on older
 * CPUs. The same guard as xxHash's xxh_x86dispatch.c.
 */
#if defined(__AVX__) && !defined(TS_ISA_FILE)
#error "treescore's generic files must be compiled without -mavx (or -march=native): ISA-specific code lives in src/engines/x86/ and is chosen at run time"
#endif

#endif /* TS_COMMON_GENERIC_H */
