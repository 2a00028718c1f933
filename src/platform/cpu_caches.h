/* cpu_caches.h: data-cache sizes of this machine, for sizing BlockWise-QS blocks. */
#ifndef TS_PLATFORM_CPU_CACHES_H
#define TS_PLATFORM_CPU_CACHES_H

#include <stddef.h>

typedef struct tsr_caches {
    size_t l1d;     /* bytes per core */
    size_t l2;      /* bytes per core (unified) */
    size_t l3;      /* bytes, shared; 0 when there is none */
    const char *source; /* "sysfs", "cpuid" or "default" */
} tsr_caches;

/* Detected once (Linux sysfs /sys/devices/system/cpu/cpu0/cache, else x86 cpuid leaf 4
 * or 0x8000001D, else defaults 32 KiB / 1 MiB / 8 MiB), cached; thread-safe. The
 * environment variables TREESCORE_L1D, TREESCORE_L2, TREESCORE_L3 (bytes, or with a K
 * or M suffix) override what was detected. */
const tsr_caches *tsr_cache_sizes(void);

#endif /* TS_PLATFORM_CPU_CACHES_H */
