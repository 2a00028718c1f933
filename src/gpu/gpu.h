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

/* What a prepared state launches with (the benchmark's report): "T threads/block, B
 * blocks/SM, S KiB shared, slice R rows"; "" in a build without CUDA. */
void tsg_engine_launch_desc(const void *state, char *buf, size_t size);

/* Kernels a gpu state can run (tsg_engine_prepare_kind): gpu-naive's, gpu's QuickScorer
 * (the engine gpu's), and for the benchmark's comparison the walk and byte-code variants
 * (docs/gpu.md). */
#define TSG_ENGINE_KIND_NAIVE 0
#define TSG_ENGINE_KIND_QS 1
#define TSG_ENGINE_KIND_WALK 2
#define TSG_ENGINE_KIND_CODES 3
#define TSG_ENGINE_KIND_WALK_CODES 4
/* The engine gpu's choice for the model (tsg_engine_kind_for): the walk on byte codes
 * where a document's codes take fewer bytes than its slot floats, else the walk. */
#define TSG_ENGINE_KIND_BEST (-1)

/* A prepared state (freed by tse_engine_gpu.free) for this kernel kind. */
ts_status tsg_engine_prepare_kind(const ts_model *m, int kind, void **state, ts_error *err);

#endif /* TS_GPU_GPU_H */
