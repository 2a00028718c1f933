/* config.h: the configuration snapshot: every environment variable the library reads, read once into one struct. */
#ifndef TS_PLATFORM_CONFIG_H
#define TS_PLATFORM_CONFIG_H

#include <stddef.h>
#include <stdint.h>

/*
 * The library's environment, read at the first tsr_config_get() call (once per process,
 * thread-safe) and never again: this file is the only one that calls getenv. Each
 * field keeps the variable's text (NULL when unset; an empty value stays "") where the
 * module that uses it gives the text its meaning and its warnings; numbers are parsed
 * here. README.md lists the TREESCORE_* variables for users.
 */
#define TSR_CC_TIMEOUT_DEFAULT 120.0
#define TSR_FIFO_TIMEOUT_DEFAULT 60.0

typedef struct tsr_config {
    /* The CPU (platform/cpu.c, platform/cpu_caches.c). */
    const char *isa;            /* TREESCORE_ISA: caps the instruction set (scalar, sse4.2,
                                   avx2, avx512; auto or empty: no cap) */
    const char *l1d, *l2, *l3;  /* TREESCORE_L1D, TREESCORE_L2, TREESCORE_L3: data-cache sizes
                                   in bytes, optional K/M/G suffix, instead of detection */

    /* Files and the compiler (platform/cachedir.c, platform/cc.c). */
    const char *cache_dir;      /* TREESCORE_CACHE_DIR: the cache directory (ifelse objects,
                                   wisdom); else $XDG_CACHE_HOME/treescore, else
                                   $HOME/.cache/treescore */
    const char *xdg_cache_home; /* XDG_CACHE_HOME (used only when absolute) */
    const char *home;           /* HOME */
    const char *tmp_dir;        /* TMPDIR: temporary build directories; empty or unset: /tmp */
    const char *cc;             /* TREESCORE_CC: the C compiler of ifelse, a path or a name
                                   looked up in PATH; empty or unset: cc */
    const char *path;           /* PATH: where compiler names are looked up */
    double cc_timeout_s;        /* TREESCORE_CC_TIMEOUT: seconds one compiler process may run
                                   before it (its whole process group) is killed; 0: no
                                   limit; unset or not a number >= 0: TSR_CC_TIMEOUT_DEFAULT */

    /* Input (io/source.c). */
    double fifo_timeout_s;      /* TREESCORE_FIFO_TIMEOUT: seconds a data file that is a FIFO
                                   may wait for a writer to open it; 0: no limit; unset or
                                   not a number >= 0: TSR_FIFO_TIMEOUT_DEFAULT */

    /* The planner (scorer/planner.c). */
    int plan_rule;              /* TREESCORE_PLAN=rule: TS_PLAN_DEFAULT means TS_PLAN_RULE
                                   (any other value: TS_PLAN_MEASURE) */
    const char *wisdom;         /* TREESCORE_WISDOM: the wisdom file; "off" or empty: none;
                                   unset: "wisdom" in the cache directory */
    double plan_ms;             /* TREESCORE_PLAN_MS: the timing budget in ms when > 0; 0:
                                   unset or not a positive number (the default budget) */

    /* The ifelse engine (engines/ifelse.c). */
    const char *ifelse_opt;     /* TREESCORE_IFELSE_OPT: the compiler's -O level (0, 1, 2, 3,
                                   s or g; anything else: the default) */

    /* The rapid engine (engines/rapid.c). */
    const char *rapid_update;   /* TREESCORE_RAPID_UPDATE: how the AVX-512 kernel ANDs an
                                   entry's mask: gfni or and; unset, empty or anything
                                   else: by the CPU (gfni on Intel CPUs with GFNI) */

    /* Test knobs: read only in builds with TS_TEST_KNOBS (CMake: on with TS_TESTS), else
     * always 0 whatever the environment says. */
    size_t chunk_rows;          /* TREESCORE_CHUNK_ROWS: rows per chunk of a batch when > 0
                                   (tests use tiny chunks so that small batches use the pool) */
    uint64_t ifelse_file_nodes; /* TREESCORE_IFELSE_FILE_NODES: nodes per generated C file
                                   when > 0 (tests split small models into several files) */
    unsigned split_trees;       /* TREESCORE_SPLIT_TREES: 1: a call of fewer rows than threads
                                   is split across trees whenever its engine can (tests);
                                   2: never; else the planner's or the rule's choice */
    unsigned rapid_pad_rows;    /* TREESCORE_RAPID_PAD_ROWS: 1: rapid's pair rows and
                                   one-tree rows padded (rapid.h "Padded rows") whenever
                                   the trees allow it; 2: never; else by the model
                                   (rapid.c pad_rows) */
    unsigned rapid_order;       /* TREESCORE_RAPID_ORDER: 1: rapid orders its leaves by a
                                   sample (rapid.h "Leaf order") whatever the model's rows
                                   and whatever a tree saves (tests: every forest); 2: never;
                                   else by the model (rapid.c order_build) */
    unsigned plan_trial;        /* TREESCORE_PLAN_TRIAL: 1: every range timed on synthetic
                                   rows with a runner-up is contested (scorer/trial.h), however
                                   far behind; 2: none is; else by TSP_TRIAL_RATIO */
    int deep_top;               /* TREESCORE_DEEP_TOP: the levels deep decides before its
                                   walk, 0 (none) to 8; -1 (unset, or anything else): deep's
                                   default */
    unsigned gpu_threads;       /* TREESCORE_GPU_THREADS: documents (threads) per block of
                                   the GPU kernels when > 0 (32-1024; tests/gpu/run.sh's sweep) */
    unsigned gpu_block_nodes;   /* TREESCORE_GPU_BLOCK_NODES: nodes per tree block of gpu when
                                   > 0 (the sweep; default TSG_BLOCK_NODES) */
    size_t gpu_slice_rows;      /* TREESCORE_GPU_SLICE_ROWS: rows per slice of a GPU call's
                                   pipeline when > 0 (the sweep; default: cuda.cu's rule) */
    unsigned gpu_no_split;      /* TREESCORE_GPU_NO_SPLIT: 1: GPU launches below a full wave
                                   do not split the trees across blocks (gpu_bench's
                                   gpu:nosplit) */
} tsr_config;

/* The snapshot, read on the first call; never NULL, never changes afterwards (except
 * through tsr_config_reload in test builds). */
const tsr_config *tsr_config_get(void);

#ifdef TS_TEST_KNOBS
/* Tests only: read the environment again after setenv/unsetenv. Not thread-safe: call it
 * while no other thread uses the library; pointers from the old snapshot die. */
void tsr_config_reload(void);
#endif

#endif /* TS_PLATFORM_CONFIG_H */
