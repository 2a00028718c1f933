/* vpred.c: placeholder for the vpred engine (being written). */
#include "common/error.h"
#include "engines/engine.h"

static ts_status stub_prepare(const ts_model *m, const tse_config *cfg, void **state, tse_layout *layout,
                              ts_error *err) {
    (void)m, (void)cfg, (void)state, (void)layout;
    return ts_fail(err, TS_ERR_ENGINE_UNAVAILABLE, "vpred: not built yet");
}
static void stub_score(const void *s, const float *x, size_t n, size_t stride, double *out, void *scratch) {
    (void)s, (void)x, (void)n, (void)stride, (void)out, (void)scratch;
}
static void stub_free(void *s) { (void)s; }

const tse_engine tse_engine_vpred = {TS_ENGINE_VPRED, "vpred", stub_prepare, stub_score, stub_free};
