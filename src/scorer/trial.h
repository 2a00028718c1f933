/* trial.h: a contested batch-size range's first calls, its two engines taking turns on the caller's rows, decide which keeps the range. */
#ifndef TS_SCORER_TRIAL_H
#define TS_SCORER_TRIAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "scorer/planner.h"

/*
 * Why: without the caller's rows (ts_scorer_options.sample) the planner times the
 * engines on synthetic rows (planner.h), whose values sit on the model's thresholds
 * independently of one another. Real rows take other paths (LTR data: many zeros,
 * correlated features, most documents in a few heavy leaves), and the traversal engines'
 * costs follow the paths: on msn-lgb-1000x256 trees-simd timed 1.3x slower than rapid
 * at 45-90 rows on synthetic rows and is 1.25-1.75x faster on the real ones; on the
 * scikit-learn forest msn-srf-500x4096 the synthetic walks are three times as long as
 * the real ones (docs/benchmarks.md, twenty-fifth session). Rows drawn along the trees'
 * heavier subtrees did not come closer (the models keep no training counts).
 *
 * So a range whose runner-up timed within TSP_TRIAL_RATIO of its winner on synthetic
 * rows is contested (tsp_plan.alt): both engines stay prepared, and the range's first
 * TSP_TRIAL_CALLS calls take turns, TSP_TRIAL_STREAK calls in a row on one engine (a
 * streak's first call untimed: the other engine's calls evicted this one's layout, which
 * a caller's run of calls keeps warm), TSP_TRIAL_STREAKS streaks each. The engine whose
 * timed calls have the lower median time per row keeps the range. Scores are the same
 * bits whichever engine a call takes (every engine is exact), so the trial changes
 * only speed.
 *
 * Concurrency (ts_scorer_score is called from many threads on one scorer): a call takes
 * its number from `calls` (one atomic add, only while the trial runs: afterwards a
 * relaxed load sees it ended), writes its time into its own slot, and counts itself in
 * `timed` (acquire-release); the call that completes the count reads every slot, decides
 * and stores the range's engine in `pick` (a relaxed atomic byte, which every call
 * reads). No lock, no allocation, no system call but the clock's.
 */
#define TSP_TRIAL_RATIO 1.5
#define TSP_TRIAL_STREAK 4u
#define TSP_TRIAL_STREAKS 3u
#define TSP_TRIAL_TIMED ((TSP_TRIAL_STREAK - 1u) * TSP_TRIAL_STREAKS) /* timed calls per engine */
#define TSP_TRIAL_CALLS (2u * TSP_TRIAL_STREAK * TSP_TRIAL_STREAKS)
_Static_assert(TSP_TRIAL_STREAK >= 2 && TSP_TRIAL_STREAKS >= 1, "a streak has a timed call");

typedef struct tsp_trial_range {
    atomic_uint calls;              /* calls begun while the trial ran (saturates past its end) */
    atomic_uint timed;              /* timed calls recorded */
    uint8_t cand[2];                /* the engines (indexes into the part's eng): the planner's
                                       pick, the runner-up */
    float s_per_row[2][TSP_TRIAL_TIMED]; /* each timed call's seconds per row, in its slot */
} tsp_trial_range;

/* A part's trials: pick[r] the engine of range r now (the planner's pick until a trial
 * decides); trial r runs where has[r]. */
typedef struct tsp_trials {
    atomic_uchar pick[TSP_RANGES];
    uint8_t has[TSP_RANGES];
    tsp_trial_range r[TSP_RANGES];
} tsp_trials;

/* The trials of a plan's contested ranges (pick and alt: the plan's), or NULL when it
 * has none or memory is short (then every range keeps the planner's pick). */
tsp_trials *tsp_trials_new(const uint8_t *pick, const uint8_t *alt);

/* The engine (an index into the part's eng) of a call in range r. While r's trial runs,
 * the call's turn: *slot >= 0 when it is to be timed (tsp_trial_record); else *slot < 0. */
static inline unsigned tsp_trial_engine(tsp_trials *t, unsigned r, int *slot) {
    *slot = -1;
    if (t->has[r]) {
        tsp_trial_range *tr = &t->r[r];
        if (atomic_load_explicit(&tr->calls, memory_order_relaxed) < TSP_TRIAL_CALLS) {
            const unsigned i = atomic_fetch_add_explicit(&tr->calls, 1u, memory_order_relaxed);
            if (i < TSP_TRIAL_CALLS) {
                const unsigned streak = i / TSP_TRIAL_STREAK, at = i % TSP_TRIAL_STREAK, who = streak & 1u;
                if (at) *slot = (int)(who * TSP_TRIAL_TIMED + (streak / 2u) * (TSP_TRIAL_STREAK - 1u) + at - 1u);
                return tr->cand[who];
            }
        }
    }
    return atomic_load_explicit(&t->pick[r], memory_order_relaxed);
}

/* A timed call of range r (its slot from tsp_trial_engine) took `seconds` for n_rows
 * rows; the last of the trial's timed calls decides the range. */
void tsp_trial_record(tsp_trials *t, unsigned r, int slot, double seconds, size_t n_rows);

#endif /* TS_SCORER_TRIAL_H */
