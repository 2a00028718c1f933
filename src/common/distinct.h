/* distinct.h: the distinct values of an array of small codes, in ascending order, by a bitmap instead of a sort. */
#ifndef TS_COMMON_DISTINCT_H
#define TS_COMMON_DISTINCT_H

#include <stddef.h>
#include <stdint.h>

#include "common/generic.h"

/*
 * The engines number the columns their nodes read by a code per node (a feature times 4
 * plus its missing rule: below 2^26, TSM_MAX_FEATURES being 2^24) and keep the distinct
 * codes in order. Sorting a code per node and dropping repeats took 20% of a cold plan on
 * a forest of 2 million nodes (vpred, block-vpred and deep each do it, trees-simd too);
 * marking each code in a bitmap of max + 1 bits and reading the bits back in order costs
 * one pass over the nodes and one over the bitmap. Codes of TS_DISTINCT_MAX or more
 * (none in practice) are sorted instead.
 */
#define TS_DISTINCT_MAX (1u << 28)

/* Replaces v[0 .. n) by its distinct values in ascending order; returns how many, or
 * SIZE_MAX when out of memory (v then unchanged). */
size_t ts_distinct_u32(uint32_t *v, size_t n);
size_t ts_distinct_u64(uint64_t *v, size_t n);

#endif /* TS_COMMON_DISTINCT_H */
