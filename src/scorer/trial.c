/* trial.c: a contested range's trial (trial.h): its calls' times recorded, the faster engine kept. */
#include "scorer/trial.h"

#include <stdlib.h>
#include <string.h>

tsp_trials *tsp_trials_new(const uint8_t *pick, const uint8_t *alt) {
    int any = 0;
    for (unsigned r = 0; r < TSP_RANGES; r++) any |= alt[r] != TSP_NO_ALT;
    if (!any) return NULL;
    tsp_trials *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    for (unsigned r = 0; r < TSP_RANGES; r++) {
        atomic_init(&t->pick[r], pick[r]);
        atomic_init(&t->r[r].calls, 0u);
        atomic_init(&t->r[r].timed, 0u);
        t->has[r] = alt[r] != TSP_NO_ALT;
        t->r[r].cand[0] = pick[r];
        t->r[r].cand[1] = t->has[r] ? alt[r] : pick[r];
    }
    return t;
}

static int cmp_float(const void *a, const void *b) {
    const float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static float median_of(const float *v) {
    float s[TSP_TRIAL_TIMED];
    memcpy(s, v, sizeof s);
    qsort(s, TSP_TRIAL_TIMED, sizeof s[0], cmp_float);
    return s[TSP_TRIAL_TIMED / 2];
}

void tsp_trial_record(tsp_trials *t, unsigned r, int slot, double seconds, size_t n_rows) {
    tsp_trial_range *tr = &t->r[r];
    tr->s_per_row[(unsigned)slot / TSP_TRIAL_TIMED][(unsigned)slot % TSP_TRIAL_TIMED] = (float)(seconds / (double)(n_rows ? n_rows : 1));
    if (atomic_fetch_add_explicit(&tr->timed, 1u, memory_order_acq_rel) + 1u != 2u * TSP_TRIAL_TIMED) return;
    /* every slot written (each before its call's count, which this one's acquires) */
    const float a = median_of(tr->s_per_row[0]), b = median_of(tr->s_per_row[1]);
    atomic_store_explicit(&t->pick[r], b < a ? tr->cand[1] : tr->cand[0], memory_order_relaxed);
}
