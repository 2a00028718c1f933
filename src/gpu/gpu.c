/* gpu.c: the engines gpu-naive and gpu (CUDA; docs/gpu.md). The kernels are in
 * kernels.cuh, the CUDA host code in cuda.cu; a build without CUDA (TS_HAVE_CUDA unset)
 * still has both engines, which then refuse with TS_ERR_ENGINE_UNAVAILABLE. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "gpu/gpu.h"
#include "gpu/gpu_layout.h"
#include "platform/config.h"
#ifdef TS_HAVE_CUDA
#include "gpu/gpu_cuda.h"
_Static_assert(TSG_KIND_NAIVE == TSG_ENGINE_KIND_NAIVE && TSG_KIND_QS == TSG_ENGINE_KIND_QS &&
                   TSG_KIND_WALK == TSG_ENGINE_KIND_WALK && TSG_KIND_CODES == TSG_ENGINE_KIND_CODES &&
                   TSG_KIND_WALK_CODES == TSG_ENGINE_KIND_WALK_CODES,
               "gpu.h and gpu_cuda.h number the kernels alike");
#endif

typedef struct gpu_state {
    void *dev;
    int kind; /* the kernel (TSG_ENGINE_KIND_*), never BEST */
} gpu_state;

int ts_gpu_info(char *buf, size_t size) {
#ifdef TS_HAVE_CUDA
    char desc[256];
    int ok = tsg_cuda_device(desc, sizeof desc);
    if (buf && size) snprintf(buf, size, ok ? "%s" : "none: no usable CUDA device (%s)", desc);
    return ok;
#else
    if (buf && size) snprintf(buf, size, "none: this treescore was built without CUDA (no nvcc when it was configured, or TS_CUDA=OFF)");
    return 0;
#endif
}

static void gpu_free(void *p) {
    gpu_state *s = p;
    if (!s) return;
#ifdef TS_HAVE_CUDA
    if (s->dev) tsg_cuda_free(s->dev);
#endif
    free(s);
}

static ts_status gpu_prepare_kind(const char *name, int kind, const ts_model *m, void **out, tse_layout *layout,
                                  ts_error *err) {
    *out = NULL;
#ifndef TS_HAVE_CUDA
    (void)kind;
    (void)m;
    (void)layout;
    return ts_fail(err, TS_ERR_ENGINE_UNAVAILABLE,
                   "%s needs CUDA: this treescore was built without it (no nvcc when it was configured, "
                   "or TS_CUDA=OFF; docs/gpu.md)",
                   name);
#else
    char msg[320];
    if (!tsg_cuda_device(msg, sizeof msg))
        return ts_fail(err, TS_ERR_ENGINE_UNAVAILABLE, "%s needs a CUDA device: none usable (%s)", name, msg);
    const tsr_config *c = tsr_config_get(); /* the test knobs (0 when unset) */
    tsg_layout *l = NULL;
    int rc = tsg_layout_build(m, c->gpu_block_nodes, &l);
    if (rc == 1) return ts_fail(err, TS_ERR_NO_MEMORY, "%s: out of memory", name);
    if (rc) return ts_fail(err, TS_ERR_LIMIT, "%s: the model has more than 2^32 nodes or leaves", name);
    /* gpu's kernel: the walk, on byte codes where they are denser than slot floats (more
     * documents per multiprocessor; measured on an H100, docs/gpu.md) */
    if (kind == TSG_ENGINE_KIND_BEST)
        kind = l->codes_ok && (uint64_t)l->n_bslots < 4u * (uint64_t)l->n_slots ? TSG_ENGINE_KIND_WALK_CODES
                                                                                : TSG_ENGINE_KIND_WALK;
    gpu_state *s = calloc(1, sizeof *s);
    if (!s) {
        tsg_layout_free(l);
        return ts_fail(err, TS_ERR_NO_MEMORY, "%s: out of memory", name);
    }
    s->kind = kind;
    tsg_tuning tune = {c->gpu_threads, c->gpu_slice_rows, c->gpu_no_split == 1};
    rc = tsg_cuda_prepare(l, kind, &tune, &s->dev, msg, sizeof msg);
    tsg_layout_free(l);
    if (rc) {
        free(s);
        return ts_fail(err, TS_ERR_ENGINE_UNAVAILABLE, "%s: %s", name, msg);
    }
    /* One call per batch: the scorer never cuts a batch into chunks for its threads (the
     * GPU takes the whole batch; calls from several threads take turns). */
    *layout = (tse_layout){TS_ISA_SCALAR, 0, 0, 0, (size_t)1 << 40, 0};
    *out = s;
    return TS_OK;
#endif
}

ts_status tsg_engine_prepare_kind(const ts_model *m, int kind, void **state, ts_error *err) {
    tse_layout layout;
    static const char *const names[] = {"gpu-naive", "gpu (qs)", "gpu (walk)", "gpu (codes)", "gpu (walk-codes)"};
    if (kind == TSG_ENGINE_KIND_BEST) return gpu_prepare_kind("gpu", kind, m, state, &layout, err);
    if (kind < 0 || kind > 4) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "gpu: no kernel kind %d", kind);
    return gpu_prepare_kind(names[kind], kind, m, state, &layout, err);
}

static ts_status gpu_naive_prepare(const ts_model *m, const tse_config *cfg, void **out, tse_layout *layout,
                                   ts_error *err) {
    (void)cfg;
    return gpu_prepare_kind("gpu-naive", TSG_ENGINE_KIND_NAIVE, m, out, layout, err);
}

static ts_status gpu_qs_prepare(const ts_model *m, const tse_config *cfg, void **out, tse_layout *layout,
                                ts_error *err) {
    (void)cfg;
    return gpu_prepare_kind("gpu", TSG_ENGINE_KIND_BEST, m, out, layout, err);
}

/* A CUDA error leaves NaN in every out[r] (the contract has no error return; the
 * message is kept by cuda.cu, tsg_cuda_last_error). */
static void gpu_score(const void *p, const float *x, size_t n_rows, size_t stride, double *out, void *scratch) {
    const gpu_state *s = p;
    (void)scratch;
#ifdef TS_HAVE_CUDA
    tsg_cuda_score(s->dev, x, n_rows, stride, out);
#else
    (void)s;
    (void)x;
    (void)stride;
    for (size_t r = 0; r < n_rows; r++) out[r] = NAN;
#endif
}

int tsg_engine_time(const void *state, const float *x, size_t n_rows, size_t stride, double *out, int reps,
                    double *kernel_s, double *e2e_s) {
#ifdef TS_HAVE_CUDA
    const gpu_state *s = state;
    return tsg_cuda_time(s->dev, x, n_rows, stride, out, reps, kernel_s, e2e_s) ? -1 : 0;
#else
    (void)state, (void)x, (void)n_rows, (void)stride, (void)out, (void)reps, (void)kernel_s, (void)e2e_s;
    return -1;
#endif
}

void tsg_engine_launch_desc(const void *state, char *buf, size_t size) {
    if (!buf || !size) return;
    buf[0] = '\0';
#ifdef TS_HAVE_CUDA
    static const char *const kind_names[] = {"naive", "qs", "walk", "codes", "walk-codes"};
    const gpu_state *s = state;
    unsigned threads = 0, threads_small = 0;
    size_t slice = 0, smem = 0, wave = 0;
    int bpsm = 0;
    tsg_cuda_launch_info(s->dev, &threads, &slice, &bpsm, &smem, &threads_small, &wave);
    snprintf(buf, size,
             "kernel %s, %u threads/block, %d blocks/SM, %.1f KiB shared (split launches below %zu rows: %u threads/block), "
             "slice %zu rows",
             kind_names[s->kind], threads, bpsm, (double)smem / 1024.0, wave, threads_small, slice);
#else
    (void)state;
#endif
}

/* Never planner candidates (plan_candidate NULL): --engine auto does not time a GPU. */
const tse_engine tse_engine_gpu_naive = {
    .id = TS_ENGINE_GPU_NAIVE, .name = "gpu-naive", .prepare = gpu_naive_prepare, .score = gpu_score,
    .free = gpu_free, .plan_candidate = NULL,
};

const tse_engine tse_engine_gpu = {
    .id = TS_ENGINE_GPU, .name = "gpu", .prepare = gpu_qs_prepare, .score = gpu_score, .free = gpu_free,
    .plan_candidate = NULL,
};
