/* planner.h: TS_ENGINE_AUTO: pick the engine for a model, batch size and machine by timing candidates or by rule. */
#ifndef TS_SCORER_PLANNER_H
#define TS_SCORER_PLANNER_H

#include "engines/engine.h"

/* What the planner hands the scorer: the chosen engine, already prepared. */
typedef struct tsr_plan {
    const tse_engine *engine;
    void *state;        /* engine->prepare's state (the scorer owns it from here) */
    tse_layout layout;
    char *report;       /* malloc'd text: why (ts_scorer_plan_report) */
} tsr_plan;

/*
 * The planner, for opts->engine == TS_ENGINE_AUTO:
 *   - plan mode: opts->plan, where TS_PLAN_DEFAULT means TREESCORE_PLAN ("rule" or
 *     "measure"; measure when unset);
 *   - rule: tsr_plan_rule's engine, no timing;
 *   - measure: first the wisdom file (an earlier answer for the same model fingerprint,
 *     batch size, thread count, ISA level, CPU, block settings and candidate set); else
 *     every candidate engine is prepared and timed, on n_threads threads, on a sample of
 *     min(batch_hint, a cap that bounds the time) rows (the caller's opts->sample, or
 *     synthetic rows whose values sit on, just above and just below the model's
 *     thresholds, and some NaN), in alternating rounds;
 *     the fastest median wins and is appended to the wisdom file.
 * Candidates: vqs (qs when the ISA is scalar), vpred, block-vpred, naive, block-naive,
 * and ifelse only when its compiled object is already in the (trusted) cache. The planner
 * never starts a compile (it can take minutes on big models): every engine is prepared
 * with cfg->no_build set. A wisdom line naming an engine outside the key's candidate set
 * is ignored; the wisdom file is read and written only through a trusted directory
 * (artifacts.h). What engines and the environment said while planning (notes.h) is
 * appended to the report after a line "notes:".
 */
ts_status tsr_plan_engine(const ts_model *m, const ts_scorer_options *opts, const tse_config *cfg,
                          unsigned n_threads, tsr_plan *out, ts_error *err);

/* The wisdom file's text, for tests and tests/fuzz/fuzz_wisdom.c:
 * tsr_wisdom_line_valid: 1 when a NUL-terminated line is a valid answer (its engine in
 * its candidate set); tsr_wisdom_compact_text: the newest valid, '\n'-ended line per key
 * of the NUL-terminated text buf (its lines in file order) into out (room for strlen(buf)
 * bytes, not terminated); returns the bytes written, (size_t)-1 when out of memory. buf
 * is modified while it runs and restored. Not thread-safe (the planner holds a lock). */
int tsr_wisdom_line_valid(const char *line);
size_t tsr_wisdom_compact_text(char *buf, char *out);

/* The rule of thumb (TS_PLAN_RULE) for batches of `batch` rows, and why, in `why` (at
 * least 160 bytes). */
ts_engine tsr_plan_rule(const ts_model *m, ts_isa isa, unsigned batch, char *why, size_t why_size);

#endif /* TS_SCORER_PLANNER_H */
