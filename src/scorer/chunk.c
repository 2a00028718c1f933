/* chunk.c: tsr_score_chunk, one engine call over a slice of a batch on this thread's scratch. */
#include "scorer/chunk.h"

#include "platform/scratch.h"

ts_status tsr_score_chunk(void *ctx, size_t begin, size_t end) {
    const tsr_score_job *j = ctx;
    void *scratch = j->scratch_bytes ? tsr_scratch(j->scratch_bytes) : NULL;
    if (j->scratch_bytes && !scratch) return TS_ERR_NO_MEMORY;
    j->engine->score(j->state, j->x + begin * j->stride, end - begin, j->stride, j->out + begin, scratch);
    return TS_OK;
}
