/* cpu_caches.c: data-cache sizes from Linux sysfs, else x86 cpuid, else defaults; environment overrides. */
#include "platform/cpu_caches.h"

#include <ctype.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/config.h"
#include "platform/notes.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define TSR_X86 1
#else
#define TSR_X86 0
#endif

#define KIB ((size_t)1024)
#define MAX_CACHE_INDEX 32

static tsr_caches caches;
static pthread_once_t caches_once = PTHREAD_ONCE_INIT;

/* Parses "48K", "2048K", "260M", "1G" or plain bytes, with surrounding whitespace
 * (sysfs ends lines with '\n'). Returns 0 and leaves *out alone on anything else,
 * including overflow. */
static int parse_size(const char *s, size_t *out) {
    while (isspace((unsigned char)*s)) s++;
    if (!isdigit((unsigned char)*s)) return 0;
    uint64_t v = 0;
    for (; isdigit((unsigned char)*s); s++) {
        if (v > (UINT64_MAX - 9) / 10) return 0;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    unsigned shift = 0;
    switch (*s) {
    case 'K': case 'k': shift = 10; s++; break;
    case 'M': case 'm': shift = 20; s++; break;
    case 'G': case 'g': shift = 30; s++; break;
    default: break;
    }
    while (isspace((unsigned char)*s)) s++;
    if (*s) return 0;
    if (v > (uint64_t)SIZE_MAX >> shift) return 0;
    *out = (size_t)(v << shift);
    return 1;
}

/* Reads the first line of a small file into buf; 0 when it cannot. */
static int read_line(const char *path, char *buf, size_t size) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int ok = fgets(buf, (int)size, f) != NULL;
    fclose(f);
    return ok;
}

/* Records a data or unified cache of `level` (1..3) in *c, keeping the first seen. */
static void record(tsr_caches *c, unsigned level, size_t bytes) {
    size_t *slot = level == 1 ? &c->l1d : level == 2 ? &c->l2 : level == 3 ? &c->l3 : NULL;
    if (slot && *slot == 0) *slot = bytes;
}

/* /sys/devices/system/cpu/cpu0/cache/indexN/{level,type,size}, N = 0, 1, ... until one
 * is missing. Instruction caches are skipped. */
static int from_sysfs(tsr_caches *c) {
    for (int i = 0; i < MAX_CACHE_INDEX; i++) {
        char path[128], level[32], type[32], size[32];
        const char *dir = "/sys/devices/system/cpu/cpu0/cache/index";
        snprintf(path, sizeof path, "%s%d/level", dir, i);
        if (!read_line(path, level, sizeof level)) break;
        snprintf(path, sizeof path, "%s%d/type", dir, i);
        if (!read_line(path, type, sizeof type)) continue;
        snprintf(path, sizeof path, "%s%d/size", dir, i);
        if (!read_line(path, size, sizeof size)) continue;
        size_t lvl, bytes;
        if (!parse_size(level, &lvl) || !parse_size(size, &bytes) || bytes == 0) continue;
        if (strncmp(type, "Data", 4) != 0 && strncmp(type, "Unified", 7) != 0) continue;
        record(c, (unsigned)lvl, bytes);
    }
    return c->l1d && c->l2;
}

#if TSR_X86

/* Deterministic cache parameters (Intel leaf 4, AMD leaf 0x8000001D share the layout):
 * EAX[4:0] type (0 none, 1 data, 2 instruction, 3 unified), EAX[7:5] level,
 * EBX = ways-1 [31:22], partitions-1 [21:12], line size-1 [11:0], ECX = sets-1. */
static int from_cpuid_leaf(tsr_caches *c, unsigned leaf) {
    for (unsigned i = 0; i < MAX_CACHE_INDEX; i++) {
        unsigned a, b, cx, d;
        if (!__get_cpuid_count(leaf, i, &a, &b, &cx, &d)) return 0;
        unsigned type = a & 0x1f;
        if (type == 0) break;
        if (type == 2) continue;
        size_t ways = ((b >> 22) & 0x3ff) + 1, parts = ((b >> 12) & 0x3ff) + 1;
        size_t line = (b & 0xfff) + 1, sets = (size_t)cx + 1;
        record(c, (a >> 5) & 7, ways * parts * line * sets);
    }
    return c->l1d && c->l2;
}

static int is_vendor(const char *name) {
    unsigned a, b, c, d;
    char v[13];
    if (!__get_cpuid(0, &a, &b, &c, &d)) return 0;
    memcpy(v, &b, 4);
    memcpy(v + 4, &d, 4);
    memcpy(v + 8, &c, 4);
    v[12] = '\0';
    return strcmp(v, name) == 0;
}

static int from_cpuid(tsr_caches *c) {
    if (is_vendor("AuthenticAMD") || is_vendor("HygonGenuine")) {
        unsigned a, b, cx, d; /* TOPOEXT (0x80000001 ECX bit 22) enables leaf 0x8000001D */
        if (__get_cpuid(0x80000001u, &a, &b, &cx, &d) && (cx >> 22 & 1))
            return from_cpuid_leaf(c, 0x8000001Du);
        return 0;
    }
    return from_cpuid_leaf(c, 4);
}

#else

static int from_cpuid(tsr_caches *c) {
    (void)c;
    return 0;
}

#endif /* TSR_X86 */

/* TREESCORE_L1D etc.: a size with an optional K, M or G suffix; a bad value (or 0 for
 * L1D and L2, which must exist) is ignored with a warning note (notes.h). */
static void env_override(const char *name, const char *v, size_t *slot, int zero_ok) {
    size_t bytes;
    if (!v) return;
    if (parse_size(v, &bytes) && (bytes > 0 || zero_ok)) {
        *slot = bytes;
        return;
    }
    tsr_note(TSR_NOTE_WARN, "treescore: ignoring %s=%s (expected a size in bytes, with an optional K, M or G suffix)",
             name, v);
}

static void detect(void) {
    tsr_caches c = {0, 0, 0, NULL};
    if (from_sysfs(&c)) {
        c.source = "sysfs";
    } else {
        c = (tsr_caches){0, 0, 0, NULL};
        if (from_cpuid(&c)) {
            c.source = "cpuid";
        } else {
            c = (tsr_caches){32 * KIB, 1024 * KIB, 8192 * KIB, "default"};
        }
    }
    const tsr_config *env = tsr_config_get();
    env_override("TREESCORE_L1D", env->l1d, &c.l1d, 0);
    env_override("TREESCORE_L2", env->l2, &c.l2, 0);
    env_override("TREESCORE_L3", env->l3, &c.l3, 1);
    caches = c;
}

const tsr_caches *tsr_cache_sizes(void) {
    pthread_once(&caches_once, detect);
    return &caches;
}
