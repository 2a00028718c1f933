/* gpu.h: what the GPU engines offer beyond engine.h (src/gpu/gpu.c). */
#ifndef TS_GPU_GPU_H
#define TS_GPU_GPU_H

#include <stddef.h>

#include "engines/engine.h"

/* Kernel-only and end-to-end seconds per call of a prepared gpu or gpu-naive state on
 * these rows (the benchmark, tests/gpu/gpu_bench.c); out gets the scores. Returns 0, or
 * -1 in a build without CUDA or on a CUDA error. */
int tsg_engine_time(const void *state, const float *x, size_t n_rows, size_t stride, double *out, int reps,
                    double *kernel_s, double *e2e_s);

#endif /* TS_GPU_GPU_H */
