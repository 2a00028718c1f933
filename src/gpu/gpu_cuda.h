/* gpu_cuda.h: the CUDA side of the GPU engines (src/gpu/cuda.cu, built only when CMake
 * finds nvcc: TS_HAVE_CUDA), called from gpu.c. Plain C types only. */
#ifndef TS_GPU_CUDA_H
#define TS_GPU_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/gpu_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TSG_KIND_NAIVE 0 /* gpu-naive */
#define TSG_KIND_QS 1    /* gpu: QuickScorer entries, a warp per 32 documents */
#define TSG_KIND_WALK 2  /* gpu's walk variant: nodes and slots in shared memory */
#define TSG_KIND_CODES 3 /* gpu's byte-code variant: QuickScorer entries on rapid's codes */
#define TSG_KIND_WALK_CODES 4 /* gpu's walk on byte codes (the engine gpu's kernel where codes are denser) */

/* 1 when a CUDA device can run the kernels (desc: its name, compute capability and
 * memory), else 0 (desc: why not, e.g. "cudaGetDeviceCount: no CUDA-capable device is
 * detected"). Asked once per process; the answer is cached. */
int tsg_cuda_device(char *desc, size_t size);

/* Launch settings a benchmark may force (0: cuda.cu's own choice; tsr_config's test
 * knobs TREESCORE_GPU_THREADS, TREESCORE_GPU_SLICE_ROWS and TREESCORE_GPU_NO_SPLIT). */
typedef struct tsg_tuning {
    unsigned threads;  /* documents (threads) per block, 32 to 1024 */
    size_t slice_rows; /* rows per slice of a call's copy/score pipeline */
    int no_split;      /* 1: launches below a full wave do not split the trees across blocks */
} tsg_tuning;

/* Uploads the layout's arrays for one engine kind; *dev is the device state (the layout
 * may be freed afterwards). tune may be NULL. 0 on success, else a message in msg. */
int tsg_cuda_prepare(const tsg_layout *l, int kind, const tsg_tuning *tune, void **dev, char *msg, size_t size);

/* What a prepared state launches with, for the benchmark's report: threads per block,
 * blocks per multiprocessor and shared memory of a plain launch, threads per block of a
 * split launch (below wave_rows rows), rows per slice. */
void tsg_cuda_launch_info(const void *dev, unsigned *threads, size_t *slice_rows, int *blocks_per_sm,
                          size_t *smem_bytes, unsigned *threads_small, size_t *wave_rows);

/* Scores n_rows rows (row r at x + r * stride, n_features floats read) into out.
 * Safe to call from several threads (calls on one state take turns). On a CUDA error
 * every out[r] is NaN and 1 is returned (the message kept for tsg_cuda_last_error). */
int tsg_cuda_score(void *dev, const float *x, size_t n_rows, size_t stride, double *out);

/* Timings for the benchmark (tests/gpu/gpu_bench.c): the rows uploaded once, then reps
 * kernel launches timed with events (seconds per launch: *kernel_s), and reps whole
 * tsg_cuda_score calls (transfers included: *e2e_s). out gets the scores. 0 on success. */
int tsg_cuda_time(void *dev, const float *x, size_t n_rows, size_t stride, double *out, int reps, double *kernel_s,
                  double *e2e_s);

void tsg_cuda_free(void *dev);

/* The last CUDA error message of this process ("" when none). */
const char *tsg_cuda_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* TS_GPU_CUDA_H */
