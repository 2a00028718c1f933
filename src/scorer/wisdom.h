/* wisdom.h: the planner's wisdom file (earlier timing answers): the key of an answer, lookup, append, compaction. */
#ifndef TS_SCORER_WISDOM_H
#define TS_SCORER_WISDOM_H

#include <stddef.h>
#include <stdint.h>

#include "treescore.h"
#include "platform/artifacts.h"

_Static_assert(TS_ENGINE_COUNT <= 32, "the wisdom key's candidate set is a 32-bit mask");

/* What an answer is for (the planner's make_key fills it). */
typedef struct tsp_wisdom_key {
    char model[33];
    char cpu[33];
    unsigned batch, threads;
    ts_isa isa;
    uint32_t tau, delta, lanes;
    const char *rows;       /* "data" (caller's sample) or "synthetic" */
    ts_engine ids[TS_ENGINE_COUNT]; /* the candidate engines (candidate_ids), n_ids of them */
    int n_ids;
    unsigned cands;         /* the same set, bit (1 << ts_engine) each: an answer found
                               before ifelse was compiled is not reused after */
} tsp_wisdom_key;

/* The wisdom file: TREESCORE_WISDOM (a path; "off" or empty: none), else "wisdom" in
 * the cache directory. Its directory is opened and checked (artifacts.h); the file is
 * only read or written through that descriptor, never through a symbolic link. A file
 * that does not start with "treescore-wisdom-" (and is not empty) is neither read nor
 * written (a warning says so once). */
typedef struct tsp_wisdom_file {
    tsr_cache dir;
    char name[256];
} tsp_wisdom_file;

/* 0 when the wisdom file may be used; -1 when it is off or has no place (or its
 * directory is not trusted: then a warning says so once). create: make the cache
 * directory when it is missing. Close with tsr_cache_close(&w->dir). */
int tsp_wisdom_open(tsp_wisdom_file *w, int create);

/* 1 and the newest answer for key k (engine, its runner-up alt or TS_ENGINE_AUTO, us
 * per doc, split) when the file has one; else 0. */
int tsp_wisdom_lookup(const tsp_wisdom_key *k, const tsp_wisdom_file *f, ts_engine *engine, ts_engine *alt,
                      double *us, int *split);

/* Appends the answer for key k (alt: the runner-up a trial decides against, or
 * TS_ENGINE_AUTO), compacting the file when it has grown large; 0 when the line was
 * written, -1 otherwise (silent: the wisdom file is an optimization). */
int tsp_wisdom_store(const tsp_wisdom_key *k, const tsp_wisdom_file *f, ts_engine e, ts_engine alt, int split,
                     double us);

/* The wisdom file's text, for tests and tests/fuzz/fuzz_wisdom.c:
 * tsp_wisdom_line_valid: 1 when a NUL-terminated line is a valid answer (its engine in
 * its candidate set); tsp_wisdom_compact_text: the newest valid, '\n'-ended line per key
 * of the NUL-terminated text buf (its lines in file order) into out (room for strlen(buf)
 * bytes, not terminated); returns the bytes written, (size_t)-1 when out of memory. buf
 * is modified while it runs and restored. Not thread-safe (the store holds a lock). */
int tsp_wisdom_line_valid(const char *line);
size_t tsp_wisdom_compact_text(char *buf, char *out);

#endif /* TS_SCORER_WISDOM_H */
