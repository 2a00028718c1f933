/* planner.h: TS_ENGINE_AUTO: pick the engine for a model, batch size and machine by timing candidates or by rule. */
#ifndef TS_SCORER_PLANNER_H
#define TS_SCORER_PLANNER_H

#include "engines/engine.h"
#include "scorer/chunk.h"

/* Batch-size ranges: a scorer keeps an engine per range and each ts_scorer_score call
 * uses the engine of the range its n_rows falls in. Range r holds batches of
 * tsp_range_first[r] .. tsp_range_first[r + 1] - 1 rows (the last: and more); the
 * planner times range r at tsp_range_batch[r] rows, about the geometric mean of its ends
 * (6-7: at 7, below; 16: at 16).
 * Chosen from measurements on 500 x 64 and 1,000 x 64-leaf trees (docs/benchmarks.md,
 * 2026-11-26/27): trees-simd wins one row to 15-26 rows (its cost per row is flat; the
 * crossover is 15 on msn-lgb-1000x64, about 21 on msn-xgb-1000x64, 26 on the dev model),
 * rapid from there, and its lead grows to 4x past 100. rapid's cost per call is nearly
 * constant below 64 rows (a group of 64 lanes: 64-78 us a call from 8 to 31 rows on
 * msn-lgb-1000x64), so its cost per row falls as 1/n: against an engine of flat cost per
 * row, a range [a, b] timed at sqrt(a b) rows is off by at most sqrt(b / a) at its ends
 * when the crossover falls inside it (timing one end: b / a). Hence short ranges where
 * the crossovers fall: 8-15, 16-23 and 24-31 (at most 1.4x, 1.2x, 1.14x off). 8-31 timed
 * at 16 gave 11-row calls to rapid on msn-lgb-1000x64 where trees-simd was 1.39x faster;
 * 16-31 timed at 22 rows is a tie on the dev model, where trees-simd is 1.2-1.3x rapid
 * at 16 rows (Python's batch 16 goal). 32-127 is cut at 64 (32-63 timed at 45, 64-127 at
 * 90): on msn-lgb-1000x256 (256-leaf trees) trees-simd is 1.2-1.4x ifelse and rapid at
 * 32-48 rows and ties them from 64 on, so one range timed at 64 gave 32-63 rows to rapid
 * (1.2-1.6x slower there) in two plans of four; 2-7 is cut at 6 (2-5 timed at 3, 6-7 at 7): rapid
 * leads trees-simd by 1.25-1.3x at 7 rows on msn-lgb-1000x64 and msn-xgb-1000x64 and
 * trails it at 2-5. 6-7 is timed at its upper end: the planner's alternating rounds
 * evict rapid's larger layout, and at 6 rows its timings put the two within 5% where
 * bench measures rapid 1.1x ahead (docs/benchmarks.md, eighteenth session). The
 * 16 rows are a range of their own: since rapid's pairs are interleaved and taken at
 * AVX-512 (twenty-first session), rapid leads trees-simd by 1.1-1.25x at 16 rows on
 * msn-lgb-1000x64, msn-xgb-1000x64 and msn-sgb-500x64 (a pair pass costs the same for 1-16
 * rows, so the lead is at 16 alone), and from 17 rows it takes its groups of 64 lanes,
 * 1.2-1.4x slower than trees-simd at 20: 16-23 timed at 19 gave 16 to trees-simd. The
 * wisdom file keys an answer by the batch timed (not the range's index), so answers
 * timed for older ranges (16 rows) are simply not found. */
#define TSP_RANGES 10
extern const uint32_t tsp_range_first[TSP_RANGES];
extern const uint32_t tsp_range_batch[TSP_RANGES];

static inline unsigned tsp_range_of(size_t n_rows) {
    return n_rows < 16 ? (n_rows < 6 ? (n_rows < 2 ? 0u : 1u) : n_rows < 8 ? 2u : 3u)
                       : n_rows < 32 ? (n_rows < 24 ? (n_rows < 17 ? 4u : 5u) : 6u) : n_rows < 128 ? (n_rows < 64 ? 7u : 8u) : 9u;
}

/* One prepared engine. */
typedef struct tsp_prepared {
    const tse_engine *engine;
    void *state;        /* engine->prepare's state (the scorer owns it from here) */
    tse_layout layout;
} tsp_prepared;

/* Distinct engines a plan may hold: the ranges' picks and their runners-up. */
#define TSP_MAX_ENG 16u
_Static_assert(TS_ENGINE_COUNT <= TSP_MAX_ENG, "a plan can hold every engine");
#define TSP_NO_ALT 0xFFu

/* What the planner hands the scorer: the engines chosen, already prepared, each once. */
typedef struct tsp_plan {
    tsp_prepared eng[TSP_MAX_ENG]; /* n_eng distinct engines */
    unsigned n_eng;
    uint8_t pick[TSP_RANGES];      /* range -> index into eng */
    uint8_t alt[TSP_RANGES];       /* a contested range's runner-up (index into eng; the range's
                                      first calls decide: scorer/trial.h), else TSP_NO_ALT */
    int split;          /* 1: calls of fewer rows than threads split one row's trees
                           across threads (the one-row range's engine can) */
    char *report;       /* malloc'd text: why (ts_scorer_plan_report) */
} tsp_plan;

/* Frees the engines' states and the report. */
void tsp_plan_free(tsp_plan *p);

/* Makes no range contested: frees the engines only runners-up used (a scorer that
 * cannot run trials: several outputs, categorical splits). */
void tsp_plan_drop_alts(tsp_plan *p);

/* The rule for splitting one row's trees across n_threads threads: the engine can, and
 * a row has enough work (internal nodes) to pay the pool's hand-off; trees-simd, 4-5x
 * qs on one row, needs TSP_SPLIT_RULE_TSIMD times the nodes (msn-lgb-1000x256, 255,000
 * nodes, 6 us a row whole, took 14 split on 2 threads: the hand-off, ~8 us, on the busy
 * 2-core Zen 4 of docs/benchmarks.md). */
#define TSP_SPLIT_RULE_NODES 200000u
#define TSP_SPLIT_RULE_TSIMD 5u
int tsp_split_rule(const ts_model *m, const tse_engine *e, const void *state, unsigned n_threads);

/*
 * The planner, for opts->engine == TS_ENGINE_AUTO:
 *   - ranges: opts->batch_hint 0 plans every batch-size range (tsp_range_first); a
 *     nonzero batch_hint plans only its range, timed at batch_hint rows, and that
 *     engine scores every call;
 *   - plan mode: opts->plan, where TS_PLAN_DEFAULT means TREESCORE_PLAN ("rule" or
 *     "measure"; measure when unset);
 *   - rule: tsp_plan_rule's engine per range, no timing;
 *   - measure: per range, first the wisdom file (an earlier answer for the same model
 *     fingerprint, batch size, thread count, ISA level, CPU, block settings and candidate
 *     set); the ranges it does not answer are timed: every candidate engine is prepared
 *     once (shared by the ranges), and timed, on n_threads threads, on a sample of
 *     min(batch, a cap that bounds the time) rows (the caller's opts->sample, or
 *     synthetic rows whose values sit on, just above and just below the model's
 *     thresholds, and some NaN), in alternating rounds (each timing after one untimed
 *     call of the same candidate: warm, as a caller's calls in a row); a probe first drops candidates
 *     PRUNE_FACTOR times slower than the best; ranges of small batches get a smaller
 *     budget and time fewer rows. The fastest median wins and is appended to the wisdom
 *     file (one line per range); on synthetic rows a runner-up within TSP_TRIAL_RATIO
 *     of it is kept too (alt, in the wisdom line as well), and the range's first calls
 *     decide between the two on the caller's rows (scorer/trial.h). With n_threads > 1, the one-row range's winner is also
 *     timed splitting the row's trees across threads (chunk.h), and that wins when
 *     faster.
 * Candidates: every registered engine whose plan_candidate says so, for every range
 * (ifelse only when its compiled object is already in the trusted cache). The planner
 * never starts a compile (it can take minutes on big models): every engine is prepared
 * with cfg->no_build set. A wisdom line naming an engine outside the key's candidate set
 * is ignored; the wisdom file is read and written only through a trusted directory
 * (artifacts.h). What engines and the environment said while planning (notes.h) is
 * appended to the report after a line "notes:".
 */
ts_status tsp_plan_engine(const ts_model *m, const ts_scorer_options *opts, const tse_config *cfg,
                          unsigned n_threads, tsp_plan *out, ts_error *err);

/* The rule of thumb (TS_PLAN_RULE) for batches of `batch` rows, and why, in `why` (at
 * least 160 bytes). */
ts_engine tsp_plan_rule(const ts_model *m, ts_isa isa, unsigned batch, char *why, size_t why_size);

#endif /* TS_SCORER_PLANNER_H */
