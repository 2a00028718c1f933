/* main.c: the treescore command: dispatch to subcommands, --help, --version; prints the library's notes; SIGPIPE ends it quietly. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "platform/notes.h"

static const char usage[] =
    "usage: treescore <command> [options]\n"
    "\n"
    "Score documents with tree ensembles (LightGBM, XGBoost, CatBoost, QuickRank and RankLib models,\n"
    "ONNX-ML tree ensembles: scikit-learn's through skl2onnx), exactly as the training library\n"
    "does, only faster.\n"
    "\n"
    "commands:\n"
    "  score    one score per row of a data file\n"
    "  rank     rank the rows of each query, print the top K and NDCG@K\n"
    "  info     summarize a model file\n"
    "  bench    time engines side by side on the same rows\n"
    "\n"
    "'treescore <command> --help' (or 'treescore help <command>') tells more.\n"
    "'treescore --version' prints the version and what this CPU offers.\n"
    "\n"
    "example:\n"
    "  treescore rank -m data/example/model.txt -d data/example/rank.test --top 10\n";

/* "cpu: avx512 (this build can use scalar, sse4.2, avx2, avx512), 2 threads": the levels
 * up to ts_cpu_isa() (which TREESCORE_ISA lowers); only scalar off x86-64. */
static void print_cpu(void) {
    ts_isa best = ts_cpu_isa();
    printf("cpu: %s (this build can use %s", ts_isa_name(best), ts_isa_name(TS_ISA_SCALAR));
#if defined(__x86_64__)
    for (int l = TS_ISA_SCALAR + 1; l <= (int)best && l < TS_ISA_COUNT; l++) printf(", %s", ts_isa_name((ts_isa)l));
#endif
    printf("), %u threads\n", ts_cpu_count());
}

/* The library prints nothing; the CLI prints its notes: warnings always, reports (the
 * ifelse cache hit or compile cost) when TREESCORE_VERBOSE is set and not "0". */
static void print_note(tsr_note_kind kind, const char *line, void *ctx) {
    (void)ctx;
    const char *v = getenv("TREESCORE_VERBOSE");
    if (kind == TSR_NOTE_WARN || (v && *v && strcmp(v, "0") != 0)) fprintf(stderr, "%s\n", line);
}

/* Writing to a closed pipe (`treescore score ... | head -1`) ends the process quietly
 * with SIGPIPE (status 141 in a shell), as cat does, even when the parent left SIGPIPE
 * ignored: the output is unwanted, not an error. */
static void quiet_on_closed_pipe(void) { signal(SIGPIPE, SIG_DFL); }

/* What a command printed on standard output must have reached it: `treescore info >
 * /dev/full` (or a full disk) exited 0 with the summary lost. score and rank check their
 * own output and fail first; this catches the rest (info, bench, --help, --version). */
static int stdout_written(int rc) {
    if (fflush(stdout) == 0 && !ferror(stdout)) return rc;
    if (rc == CLI_OK) cli_error("writing standard output: %s", strerror(errno));
    return rc == CLI_OK ? CLI_FAILED : rc;
}

/* A standard descriptor the caller closed (`2>&-`, `<&-`, `>&-`) is taken by /dev/null,
 * opened the wrong way round so that using it fails as a closed one would (EBADF):
 * otherwise the next file opened got its number, and with stderr closed a warning went
 * into the output file (`... -d - -o out 2>&-`: a warning as the file's first line). */
static void hold_closed_std_fds(void) {
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
        int got = open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
        if (got >= 0 && got != fd) close(got); /* cannot happen: the lowest free number is fd */
    }
}

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
} command;

static const command commands[] = {
    {"score", cmd_score}, {"rank", cmd_rank}, {"info", cmd_info}, {"bench", cmd_bench},
};

int main(int argc, char **argv) {
    hold_closed_std_fds();
    quiet_on_closed_pipe();
    tsr_notes_set_sink(print_note, NULL);
    if (argc < 2) {
        fputs(usage, stderr);
        return CLI_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "help") == 0 && argc > 2) { /* treescore help score == treescore score --help */
        char help[] = "--help";
        char *args[] = {argv[2], help, NULL};
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
            if (strcmp(argv[2], commands[i].name) == 0) return stdout_written(commands[i].run(2, args));
        cmd = argv[2]; /* not a command: said below, as for 'treescore frobnicate' */
    }
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(usage, stdout);
        return stdout_written(CLI_OK);
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0 || strcmp(cmd, "version") == 0) {
        printf("treescore %s\n", ts_version_string());
        print_cpu();
        return stdout_written(CLI_OK);
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(cmd, commands[i].name) == 0) return stdout_written(commands[i].run(argc - 1, argv + 1));
    cli_error("unknown command '%s' (score, rank, info, bench; see 'treescore --help')", cmd);
    return CLI_USAGE;
}
