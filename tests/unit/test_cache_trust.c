/* test_cache_trust.c: a shared object planted in the cache directory never runs (world-writable directory, object writable by others, owned by another user, symbolic links), a damaged cached object is never loaded, a hanging compiler times out, and the wisdom file is validated (never written over another file). */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "model/hash.h"
#include "platform/artifacts.h"
#include "platform/cc.h"
#include "platform/config.h"
#include "platform/cpu.h"
#include "platform/notes.h"
#include "treescore.h"

#ifndef TS_TEST_DATA_DIR
#define TS_TEST_DATA_DIR "tests/data"
#endif

static char root[TSR_PATH_MAX];          /* everything this test makes */
static char marker[TSR_PATH_MAX + 32];   /* the planted constructor creates this file */
static char planted[TSR_PATH_MAX + 32];  /* the planted shared object */
static char so_name[256];                /* the name ifelse gives this model's object */
static ts_model *model;

/* ---- helpers ---------------------------------------------------------------------------- */

static int exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

static void write_text(const char *path, const char *text, mode_t mode) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
    chmod(path, mode);
}

static char *read_text(const char *path) {
    static char buf[1 << 20];
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static void copy_file(const char *from, const char *to, mode_t mode) {
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    CHECK(in && out);
    char buf[65536];
    size_t n;
    while (in && out && (n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, out);
    if (in) fclose(in);
    if (out) fclose(out);
    chmod(to, mode);
}

/* A planted object: a copy of `from` with a valid integrity record (artifacts.h), so that
 * only the trust checks can keep it from running. */
static void plant(const char *from, const char *to, mode_t mode) {
    copy_file(from, to, 0600);
    char why[TSR_WHY_SIZE];
    int fd = open(to, O_RDWR);
    CHECK_MSG(fd >= 0 && tsr_seal_fd(fd, why, sizeof why) == 0, "cannot seal %s", to);
    if (fd >= 0) close(fd);
    chmod(to, mode);
}

static long long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* A new directory under root with the given mode (chmod: the umask does not apply). */
static void make_dir(const char *name, mode_t mode, char *out, size_t size) {
    snprintf(out, size, "%s/%s", root, name);
    CHECK(mkdir(out, 0700) == 0);
    chmod(out, mode);
}

static void remove_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    char path[2 * TSR_PATH_MAX];
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) remove_tree(path);
        else unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

/* The name of the one ifelse-*.so in dir ("" when none or several). */
static void find_object(const char *dir, char *name, size_t size) {
    DIR *d = opendir(dir);
    int n = 0;
    name[0] = '\0';
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));)
        if (strncmp(e->d_name, "ifelse-", 7) == 0 && n++ == 0) snprintf(name, size, "%s", e->d_name);
    closedir(d);
    if (n != 1) name[0] = '\0';
}

/* Build the planted object: its constructor creates the marker file. */
static int build_planted(void) {
    tsr_cc cc;
    ts_error err;
    if (tsr_cc_find(&cc, &err) != TS_OK) return -1;
    char src[TSR_PATH_MAX + 32], code[2 * TSR_PATH_MAX], cmd[4 * TSR_PATH_MAX];
    snprintf(src, sizeof src, "%s/planted.c", root);
    snprintf(planted, sizeof planted, "%s/planted.so", root);
    snprintf(code, sizeof code,
             "#include <fcntl.h>\n#include <unistd.h>\n"
             "__attribute__((constructor)) static void planted(void) {\n"
             "    int fd = open(\"%s\", O_WRONLY | O_CREAT, 0644);\n"
             "    if (fd >= 0) close(fd);\n}\n"
             "int tsif_info;\n",
             marker);
    write_text(src, code, 0644);
    snprintf(cmd, sizeof cmd, "'%s' -shared -fPIC -o '%s' '%s' 2>&1", cc.path, planted, src);
    return system(cmd) == 0 && exists(planted) ? 0 : -1;
}

/* An ifelse scorer for the model with TREESCORE_CACHE_DIR=dir; checks its scores against
 * naive. The notes said while preparing are returned (malloc'd, may be NULL). */
static char *prepare_ifelse(const char *dir, ts_engine engine, char **report) {
    setenv("TREESCORE_CACHE_DIR", dir, 1);
    tsr_config_reload();
    ts_scorer_options o;
    ts_scorer_options_init(&o);
    o.engine = engine;
    o.n_threads = 1;
    o.batch_hint = 16;
    ts_scorer *s = NULL, *ref = NULL;
    ts_error err;
    tsr_notes_begin();
    ts_status st = ts_scorer_create(model, &o, &s, &err);
    char *notes = tsr_notes_end();
    CHECK_MSG(st == TS_OK, "%s", err.message);
    o.engine = TS_ENGINE_NAIVE;
    CHECK_STATUS(ts_scorer_create(model, &o, &ref, &err), TS_OK);
    if (s && ref) {
        uint32_t w = ts_scorer_n_features(ref);
        float x[4 * 512];
        double a[4], b[4];
        for (size_t i = 0; i < 4 * (size_t)w && i < sizeof x / sizeof x[0]; i++) x[i] = (float)(i % 7) * 0.5f;
        if (w <= 512) {
            CHECK_STATUS(ts_scorer_score(s, x, 4, w, w, a, &err), TS_OK);
            CHECK_STATUS(ts_scorer_score(ref, x, 4, w, w, b, &err), TS_OK);
            CHECK(memcmp(a, b, sizeof a) == 0);
        }
    }
    if (report) *report = s ? strdup(ts_scorer_plan_report(s)) : NULL;
    ts_scorer_free(s);
    ts_scorer_free(ref);
    return notes;
}

static void check_not_run(const char *scenario) {
    CHECK_MSG(!exists(marker), "%s: the planted object's constructor ran", scenario);
    unlink(marker);
}

/* ---- scenarios ------------------------------------------------------------------------------ */

/* The planted object is real: placed where ifelse loads from, in a trusted directory with
 * trusted permissions, it runs (this is what the other scenarios must prevent). */
static void test_planted_object_would_run(void) {
    char dir[TSR_PATH_MAX + 32], so[2 * TSR_PATH_MAX];
    make_dir("sanity", 0700, dir, sizeof dir);
    snprintf(so, sizeof so, "%s/%s", dir, so_name);
    plant(planted, so, 0700);
    free(prepare_ifelse(dir, TS_ENGINE_IFELSE, NULL));
    CHECK_MSG(exists(marker), "the planted object did not run where it is trusted: the test proves nothing");
    unlink(marker);
}

/* A world-writable cache directory: nothing in it is loaded; compiled privately, said so. */
static void test_world_writable_dir(void) {
    char dir[TSR_PATH_MAX + 32], so[2 * TSR_PATH_MAX];
    make_dir("world", 0777, dir, sizeof dir);
    snprintf(so, sizeof so, "%s/%s", dir, so_name);
    plant(planted, so, 0700);
    char *notes = prepare_ifelse(dir, TS_ENGINE_IFELSE, NULL);
    check_not_run("world-writable directory");
    CHECK_MSG(notes && strstr(notes, "not trusted"), "notes: %s", notes ? notes : "(none)");
    free(notes);
    char *report = NULL;
    free(prepare_ifelse(dir, TS_ENGINE_AUTO, &report)); /* the planner: no ifelse, no wisdom there */
    check_not_run("world-writable directory, auto");
    CHECK_MSG(report && strstr(report, "not using the cache directory"), "report: %s", report ? report : "");
    free(report);
    CHECK(!exists(marker));
    char wisdom[2 * TSR_PATH_MAX];
    snprintf(wisdom, sizeof wisdom, "%s/wisdom", dir);
    CHECK_MSG(!exists(wisdom), "wisdom written into an untrusted directory");
}

/* The object is writable by group or others, in a trusted directory. */
static void test_object_writable(void) {
    static const mode_t modes[] = {0770, 0707, 0666};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        char name[32], dir[TSR_PATH_MAX + 32], so[2 * TSR_PATH_MAX];
        snprintf(name, sizeof name, "writable%zu", i);
        make_dir(name, 0700, dir, sizeof dir);
        snprintf(so, sizeof so, "%s/%s", dir, so_name);
        plant(planted, so, modes[i]);
        char *notes = prepare_ifelse(dir, TS_ENGINE_IFELSE, NULL);
        check_not_run("object writable by group or others");
        CHECK_MSG(notes && strstr(notes, "not loading"), "notes: %s", notes ? notes : "(none)");
        free(notes);
        struct stat st; /* replaced by a good object of ours */
        CHECK(stat(so, &st) == 0 && (st.st_mode & 077) == 0);
        free(prepare_ifelse(dir, TS_ENGINE_AUTO, NULL));
        check_not_run("object writable by group or others, auto");
    }
}

/* The object is owned by another user (needs root to make; skipped otherwise). */
static void test_object_other_owner(void) {
    if (geteuid() != 0) {
        fprintf(stderr, "  (not root: the other-owner scenario is skipped)\n");
        return;
    }
    char dir[TSR_PATH_MAX + 32], so[2 * TSR_PATH_MAX];
    make_dir("owner", 0700, dir, sizeof dir);
    snprintf(so, sizeof so, "%s/%s", dir, so_name);
    plant(planted, so, 0755);
    CHECK(chown(so, 65534, 65534) == 0); /* nobody */
    char *notes = prepare_ifelse(dir, TS_ENGINE_IFELSE, NULL);
    check_not_run("object owned by another user");
    CHECK_MSG(notes && strstr(notes, "owned by uid 65534"), "notes: %s", notes ? notes : "(none)");
    free(notes);
    /* A cache directory owned by another user is not trusted either. */
    char dir2[TSR_PATH_MAX + 32], so2[2 * TSR_PATH_MAX];
    make_dir("owner-dir", 0755, dir2, sizeof dir2);
    snprintf(so2, sizeof so2, "%s/%s", dir2, so_name);
    plant(planted, so2, 0755);
    CHECK(chown(dir2, 65534, 65534) == 0);
    free(prepare_ifelse(dir2, TS_ENGINE_IFELSE, NULL));
    check_not_run("directory owned by another user");
}

/* A symbolic link in place of the object (to the planted file, which is ours and
 * trusted itself): not followed. */
static void test_object_symlink(void) {
    char dir[TSR_PATH_MAX + 32], so[2 * TSR_PATH_MAX], target[TSR_PATH_MAX + 32];
    make_dir("symlink", 0700, dir, sizeof dir);
    snprintf(target, sizeof target, "%s/target.so", root);
    plant(planted, target, 0700);
    snprintf(so, sizeof so, "%s/%s", dir, so_name);
    CHECK(symlink(target, so) == 0);
    char *notes = prepare_ifelse(dir, TS_ENGINE_IFELSE, NULL);
    check_not_run("symbolic link in place of the object");
    CHECK_MSG(notes && strstr(notes, "symbolic link"), "notes: %s", notes ? notes : "(none)");
    free(notes);
    struct stat st;
    CHECK(lstat(so, &st) == 0 && S_ISREG(st.st_mode)); /* the link was replaced, its target left alone */
    CHECK(stat(target, &st) == 0 && S_ISREG(st.st_mode));
    free(prepare_ifelse(dir, TS_ENGINE_AUTO, NULL));
    check_not_run("symbolic link in place of the object, auto");
}

/* A trusted cache directory inside a directory others can write (not sticky): someone
 * could rename it during a compile, so the build runs in $TMPDIR and the object is
 * copied in through the directory's descriptor; the next prepare is a cache hit. */
static void test_unsafe_parent(void) {
    char parent[TSR_PATH_MAX + 32], dir[TSR_PATH_MAX + 64], obj[256];
    make_dir("open-parent", 0777, parent, sizeof parent);
    snprintf(dir, sizeof dir, "%s/cache", parent);
    CHECK(mkdir(dir, 0700) == 0);
    char *notes = prepare_ifelse(dir, TS_ENGINE_IFELSE, NULL);
    CHECK_MSG(notes && strstr(notes, "cache miss") && strstr(notes, dir), "notes: %s", notes ? notes : "(none)");
    free(notes);
    find_object(dir, obj, sizeof obj);
    CHECK_MSG(!strcmp(obj, so_name), "cached: '%s'", obj);
    notes = prepare_ifelse(dir, TS_ENGINE_IFELSE, NULL);
    CHECK_MSG(notes && strstr(notes, "cache hit"), "notes: %s", notes ? notes : "(none)");
    free(notes);
    DIR *d = opendir(dir);
    int entries = 0;
    for (struct dirent *e; d && (e = readdir(d));) entries += e->d_name[0] != '.';
    if (d) closedir(d);
    CHECK(entries == 1);
}

/* ---- damaged objects, a hanging compiler ---------------------------------------------------- */

/* Damage an object of `whole` bytes: 0 cut to half (a crash or a full disk while it was
 * written), 1 4 KiB in its middle overwritten, 2 its integrity record cut off (an object
 * written by an older treescore). */
static void damage(const char *so, int kind, long long whole) {
    if (kind != 1) {
        CHECK(truncate(so, kind == 0 ? whole / 2 : whole - TSR_SEAL_BYTES) == 0);
        return;
    }
    char junk[4096];
    memset(junk, 0x5a, sizeof junk);
    int fd = open(so, O_WRONLY);
    CHECK(fd >= 0 && pwrite(fd, junk, sizeof junk, (off_t)(whole / 3)) == (ssize_t)sizeof junk);
    if (fd >= 0) close(fd);
}

static int object_whole(const char *so) {
    char why[TSR_WHY_SIZE];
    int fd = open(so, O_RDONLY);
    int ok = fd >= 0 && tsr_check_seal(fd, 1, why, sizeof why) == 0;
    if (fd >= 0) close(fd);
    return ok;
}

/* A damaged object in a trusted cache is never loaded (dlopen of a truncated object dies
 * of SIGBUS): ifelse warns and compiles it again (the new object is whole and the next
 * prepare a cache hit); auto never loads it either. */
static void test_damaged_object(void) {
    static const char *const kinds[] = {"truncated", "overwritten", "no integrity record"};
    char good[2 * TSR_PATH_MAX];
    snprintf(good, sizeof good, "%s/first/%s", root, so_name);
    long long whole = file_size(good);
    CHECK(whole > 8192 && object_whole(good));
    for (int kind = 0; kind < 3; kind++)
        for (int autoplan = 0; autoplan < 2; autoplan++) {
            char name[32], dir[TSR_PATH_MAX + 32], so[2 * TSR_PATH_MAX];
            snprintf(name, sizeof name, "damaged-%d-%d", kind, autoplan);
            make_dir(name, 0700, dir, sizeof dir);
            snprintf(so, sizeof so, "%s/%s", dir, so_name);
            copy_file(good, so, 0700);
            damage(so, kind, whole);
            char *notes = prepare_ifelse(dir, autoplan ? TS_ENGINE_AUTO : TS_ENGINE_IFELSE, NULL);
            if (!autoplan) {
                CHECK_MSG(notes && strstr(notes, "damaged") && strstr(notes, "cache miss"), "%s: notes: %s",
                          kinds[kind], notes ? notes : "(none)");
                CHECK_MSG(object_whole(so), "%s: the object was not rebuilt whole", kinds[kind]);
                free(notes);
                notes = prepare_ifelse(dir, TS_ENGINE_IFELSE, NULL);
                CHECK_MSG(notes && strstr(notes, "cache hit"), "%s: notes: %s", kinds[kind], notes ? notes : "(none)");
            }
            free(notes);
        }
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* 1 while process pid runs (a zombie waiting for its reaper counts as gone). */
static int running_pid(long pid) {
    char path[64], text[256];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    const char *paren = strrchr(text, ')');
    return paren && paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X';
}

/* A compiler that never finishes (TREESCORE_CC, with a child of its own): ifelse fails
 * after TREESCORE_CC_TIMEOUT with an error naming it, the compiler and its child are
 * killed, the build directory is removed; auto skips ifelse and scores. */
static void test_compile_timeout(void) {
    char dir[TSR_PATH_MAX + 32], cc[TSR_PATH_MAX + 32], pids[TSR_PATH_MAX + 32], script[3 * TSR_PATH_MAX];
    make_dir("timeout", 0700, dir, sizeof dir);
    snprintf(cc, sizeof cc, "%s/hanging-cc", root);
    snprintf(pids, sizeof pids, "%s/hanging-cc.pids", root);
    snprintf(script, sizeof script, "#!/bin/sh\nsleep 60 &\necho $! >> '%s'\necho $$ >> '%s'\nexec sleep 60\n", pids,
             pids);
    write_text(cc, script, 0700);
    setenv("TREESCORE_CC", cc, 1);
    setenv("TREESCORE_CC_TIMEOUT", "1", 1);
    setenv("TREESCORE_CACHE_DIR", dir, 1);
    tsr_config_reload();
    ts_scorer_options o;
    ts_scorer_options_init(&o);
    o.engine = TS_ENGINE_IFELSE;
    o.n_threads = 1;
    ts_scorer *s = NULL;
    ts_error err;
    double t0 = now_s();
    CHECK_STATUS(ts_scorer_create(model, &o, &s, &err), TS_ERR_ENGINE_UNAVAILABLE);
    CHECK_MSG(strstr(err.message, "TREESCORE_CC_TIMEOUT") && strstr(err.message, "killed"), "%s", err.message);
    CHECK_MSG(now_s() - t0 < 20, "took %.1f s", now_s() - t0);
    ts_scorer_free(s);
    s = NULL;
    FILE *f = fopen(pids, "r");
    CHECK(f != NULL);
    int n = 0;
    for (long pid; f && fscanf(f, "%ld", &pid) == 1; n++) {
        for (int i = 0; i < 200 && running_pid(pid); i++) nanosleep(&(struct timespec){0, 10000000}, NULL);
        CHECK_MSG(!running_pid(pid), "process %ld of the compiler still runs", pid);
    }
    if (f) fclose(f);
    CHECK(n >= 2);
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        CHECK_MSG(strncmp(e->d_name, ".tmp-ifelse-", 12) != 0, "build directory %s left", e->d_name);
    if (d) closedir(d);
    o.engine = TS_ENGINE_AUTO;
    CHECK_STATUS(ts_scorer_create(model, &o, &s, &err), TS_OK);
    ts_scorer_free(s);
    unsetenv("TREESCORE_CC");
    unsetenv("TREESCORE_CC_TIMEOUT");
    tsr_config_reload();
}

/* ---- the wisdom file ----------------------------------------------------------------------- */

/* A trusted cache dir whose planner run writes one wisdom line; that line in `line`. */
static void first_wisdom_line(const char *dir, char *line, size_t size) {
    char wisdom[2 * TSR_PATH_MAX];
    snprintf(wisdom, sizeof wisdom, "%s/wisdom", dir);
    free(prepare_ifelse(dir, TS_ENGINE_AUTO, NULL));
    const char *text = read_text(wisdom);
    CHECK_MSG(text && strncmp(text, "treescore-wisdom-4 ", 19) == 0, "wisdom: %s", text ? text : "(none)");
    snprintf(line, size, "%s", text ? text : "");
    char *nl = strchr(line, '\n');
    if (nl) nl[1] = '\0';
}

/* `line` with its ENGINE field (the 12th) replaced by engine. */
static void with_engine(const char *line, const char *engine, char *out, size_t size) {
    const char *p = line;
    for (int spaces = 0; *p && spaces < 11; p++)
        if (*p == ' ') spaces++;
    const char *end = strchr(p, ' ');
    snprintf(out, size, "%.*s%s%s", (int)(p - line), line, engine, end ? end : "\n");
}

/* A symbolic link in place of the wisdom file: neither read nor appended to. A line
 * naming an engine outside its candidate set is ignored. Big files are compacted, the
 * newest line per key kept. */
static void test_wisdom(void) {
    char dir[TSR_PATH_MAX + 32], wisdom[2 * TSR_PATH_MAX], target[TSR_PATH_MAX + 32];
    char line[1024], edited[1024], *report = NULL;
    make_dir("wisdom", 0700, dir, sizeof dir);
    unsetenv("TREESCORE_WISDOM");
    setenv("TREESCORE_PLAN_MS", "10", 1);
    tsr_config_reload();
    first_wisdom_line(dir, line, sizeof line);
    snprintf(wisdom, sizeof wisdom, "%s/wisdom", dir);

    /* recalled as is */
    free(prepare_ifelse(dir, TS_ENGINE_AUTO, &report));
    CHECK_MSG(report && strstr(report, "wisdom:"), "report: %s", report ? report : "");
    free(report);

    /* ifelse is no candidate (nothing compiled): a line naming it is ignored, and no
     * compile starts (no object appears) */
    with_engine(line, "ifelse", edited, sizeof edited);
    write_text(wisdom, edited, 0600);
    free(prepare_ifelse(dir, TS_ENGINE_AUTO, &report));
    CHECK_MSG(report && strstr(report, "measured:") && !strstr(report, "wisdom:"), "report: %s", report ? report : "");
    free(report);
    char obj[256];
    find_object(dir, obj, sizeof obj);
    CHECK_MSG(obj[0] == '\0', "the planner compiled %s", obj);

    /* a symbolic link in place of the wisdom file: the target (a valid line naming
     * block-naive) is not read, and not appended to */
    snprintf(target, sizeof target, "%s/wisdom-target", root);
    with_engine(line, "block-naive", edited, sizeof edited);
    write_text(target, edited, 0600);
    unlink(wisdom);
    CHECK(symlink(target, wisdom) == 0);
    free(prepare_ifelse(dir, TS_ENGINE_AUTO, &report));
    CHECK_MSG(report && !strstr(report, "wisdom:") && strstr(report, "not remembered"), "report: %s",
              report ? report : "");
    free(report);
    const char *after = read_text(target);
    CHECK(after && strcmp(after, edited) == 0);
    unlink(wisdom);

    /* a group-writable wisdom file is not read */
    with_engine(line, "block-naive", edited, sizeof edited);
    write_text(wisdom, edited, 0620);
    free(prepare_ifelse(dir, TS_ENGINE_AUTO, &report));
    CHECK_MSG(report && !strstr(report, "wisdom:"), "report: %s", report ? report : "");
    free(report);
    unlink(wisdom);

    /* compaction: 2,000 answers for one key (the newest names block-naive), garbage, then a
     * new key's answer: two lines stay */
    FILE *f = fopen(wisdom, "w");
    CHECK(f != NULL);
    for (int i = 0; f && i < 2000; i++) {
        with_engine(line, i == 1999 ? "block-naive" : i % 2 ? "naive" : "vpred", edited, sizeof edited);
        fputs(edited, f);
        if (i % 100 == 0) fputs("garbage line\n", f);
    }
    if (f) fclose(f);
    chmod(wisdom, 0600);
    setenv("TREESCORE_CACHE_DIR", dir, 1);
    tsr_config_reload();
    ts_scorer_options o;
    ts_scorer_options_init(&o);
    o.n_threads = 1;
    o.batch_hint = 17; /* another key */
    ts_scorer *s = NULL;
    ts_error err;
    CHECK_STATUS(ts_scorer_create(model, &o, &s, &err), TS_OK);
    ts_scorer_free(s);
    const char *text = read_text(wisdom);
    with_engine(line, "block-naive", edited, sizeof edited);
    CHECK_MSG(text && strncmp(text, edited, strlen(edited)) == 0, "compacted: %.300s", text ? text : "");
    size_t lines = 0;
    for (const char *p = text; p && *p; p++) lines += *p == '\n';
    CHECK_MSG(lines == 2, "%zu lines after compaction", lines);
    free(prepare_ifelse(dir, TS_ENGINE_AUTO, &report));
    CHECK_MSG(report && strstr(report, "wisdom:") && strstr(report, "block-naive"), "report: %s", report ? report : "");
    free(report);
}

/* TREESCORE_WISDOM naming a file of other data (a 160,004-byte CSV whose second line is a
 * valid wisdom line): the planner neither reads it nor writes it (no append, no
 * compaction: the file stays byte for byte), and warns. A missing file is created (0600,
 * starting with the magic); an empty one is used. */
static void test_wisdom_not_ours(void) {
    char dir[TSR_PATH_MAX + 32], csv[TSR_PATH_MAX + 32], line[1024], edited[1024], *report = NULL;
    make_dir("wisdom-foreign", 0700, dir, sizeof dir);
    unsetenv("TREESCORE_WISDOM");
    first_wisdom_line(dir, line, sizeof line);
    with_engine(line, "block-naive", edited, sizeof edited);
    size_t cap = 170000, len = 0;
    char *text = malloc(cap);
    CHECK(text != NULL);
    if (!text) return;
    len += (size_t)snprintf(text, cap, "x,y,label\n%s", edited);
    for (int i = 0; len < 160004 - 20; i++) len += (size_t)snprintf(text + len, cap - len, "%d,%d,%d\n", i, i * 7, i % 5);
    while (len < 160004) text[len++] = '\n';
    text[len] = '\0';
    snprintf(csv, sizeof csv, "%s/data.csv", root);
    write_text(csv, text, 0600);
    setenv("TREESCORE_WISDOM", csv, 1);
    char *notes = prepare_ifelse(dir, TS_ENGINE_AUTO, &report);
    CHECK_MSG(report && !strstr(report, "wisdom:"), "a non-wisdom file was read: %s", report ? report : "");
    CHECK_MSG(notes && strstr(notes, "not using") && strstr(notes, "data.csv"), "notes: %s", notes ? notes : "(none)");
    free(notes);
    free(report);
    ts_scorer_options o; /* another key: an append, and (past 64 KiB) a compaction */
    ts_scorer_options_init(&o);
    o.n_threads = 1;
    o.batch_hint = 17;
    ts_scorer *s = NULL;
    ts_error err;
    CHECK_STATUS(ts_scorer_create(model, &o, &s, &err), TS_OK);
    ts_scorer_free(s);
    struct stat st;
    const char *after = read_text(csv);
    CHECK_MSG(stat(csv, &st) == 0 && (size_t)st.st_size == len && after && strcmp(after, text) == 0,
              "the CSV named by TREESCORE_WISDOM was changed: %lld bytes", file_size(csv));
    free(text);

    static const char *const names[] = {"new-wisdom", "empty-wisdom"};
    for (int i = 0; i < 2; i++) {
        char path[TSR_PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/%s", root, names[i]);
        if (i == 1) write_text(path, "", 0600);
        setenv("TREESCORE_WISDOM", path, 1);
        free(prepare_ifelse(dir, TS_ENGINE_AUTO, NULL));
        const char *w = read_text(path);
        CHECK_MSG(w && strncmp(w, "treescore-wisdom-4 ", 19) == 0, "%s: %s", names[i], w ? w : "(none)");
        CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
    }
    unsetenv("TREESCORE_WISDOM");
    tsr_config_reload();
}

/* ---- integrity records: XXH64 test vectors, sealing -------------------------------------------- */

static void test_seal(void) {
    CHECK(tsr_hash64("", 0) == 0xEF46DB3751D8E999ull);
    CHECK(tsr_hash64("abc", 3) == 0x44BC2CF5AD770999ull);
    char path[TSR_PATH_MAX + 32], why[TSR_WHY_SIZE];
    static char data[(1 << 18) * 2 + 77];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (char)(i * 131 % 251);
    snprintf(path, sizeof path, "%s/sealed", root);
    static const size_t sizes[] = {0, 5, 31, 32, 100, 1 << 18, sizeof data};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        FILE *f = fopen(path, "wb");
        CHECK(f && fwrite(data, 1, sizes[k], f) == sizes[k]);
        if (f) fclose(f);
        int fd = open(path, O_RDWR);
        CHECK(fd >= 0 && tsr_check_seal(fd, 0, why, sizeof why) != 0); /* not sealed yet */
        CHECK(fd >= 0 && tsr_seal_fd(fd, why, sizeof why) == 0);
        CHECK_MSG(fd >= 0 && tsr_check_seal(fd, 1, why, sizeof why) == 0, "%zu bytes: %s", sizes[k], why);
        unsigned char rec[TSR_SEAL_BYTES];
        uint64_t h = 0;
        CHECK(fd >= 0 && pread(fd, rec, sizeof rec, (off_t)sizes[k]) == (ssize_t)sizeof rec);
        memcpy(&h, rec + 16, 8);
        CHECK_MSG(h == tsr_hash64(data, sizes[k]), "%zu bytes: the streamed hash differs", sizes[k]);
        if (sizes[k] > 0) { /* one flipped byte */
            char c = (char)(data[sizes[k] / 2] ^ 1);
            CHECK(pwrite(fd, &c, 1, (off_t)(sizes[k] / 2)) == 1);
            CHECK(tsr_check_seal(fd, 0, why, sizeof why) == 0 && tsr_check_seal(fd, 1, why, sizeof why) != 0);
        }
        if (fd >= 0) close(fd);
    }
    unlink(path);
}

/* ---- loading through descriptors ---------------------------------------------------------- */

/* Objects are loaded through /proc/self/fd/N, and the dynamic loader returns an object
 * already loaded under the same name: with A loaded twice (one object) and one of them
 * freed, a descriptor number freed meanwhile must not bring A back for B. */
static void test_descriptor_names(void) {
    char dir[TSR_PATH_MAX + 32];
    make_dir("names", 0700, dir, sizeof dir);
    ts_model *b = NULL;
    ts_error err;
    CHECK_STATUS(ts_model_load_file(TS_TEST_DATA_DIR "/models/xgb_small_logistic.json", TS_FORMAT_AUTO, &b, &err),
                 TS_OK);
    if (!b) return;
    setenv("TREESCORE_CACHE_DIR", dir, 1);
    tsr_config_reload();
    ts_scorer_options o;
    ts_scorer_options_init(&o);
    o.engine = TS_ENGINE_IFELSE;
    o.n_threads = 1;
    ts_scorer *a1 = NULL, *a2 = NULL, *sb = NULL;
    CHECK_STATUS(ts_scorer_create(model, &o, &a1, &err), TS_OK); /* compile both */
    CHECK_STATUS(ts_scorer_create(b, &o, &sb, &err), TS_OK);
    ts_scorer_free(a1);
    ts_scorer_free(sb);
    for (int round = 0; round < 3; round++) {
        CHECK_STATUS(ts_scorer_create(model, &o, &a1, &err), TS_OK);
        CHECK_STATUS(ts_scorer_create(model, &o, &a2, &err), TS_OK);
        ts_scorer_free(a1);
        tsr_notes_begin();
        CHECK_STATUS(ts_scorer_create(b, &o, &sb, &err), TS_OK);
        char *notes = tsr_notes_end();
        CHECK_MSG(notes && strstr(notes, "cache hit") && !strstr(notes, "rejected"), "notes: %s",
                  notes ? notes : "(none)");
        free(notes);
        ts_scorer_free(sb);
        ts_scorer_free(a2);
    }
    ts_model_free(b);
}

/* ---- SHA-256, the key of cached objects: FIPS 180-4 test vectors ----------------------------- */

static int sha_ni; /* test_sha256 runs twice: the portable compression, then the SHA extensions */

static void sha_hex(const void *data, size_t len, size_t chunk, char out[65]) {
    tsm_sha256 c;
    unsigned char d[32];
    tsm_sha256_init_ni(&c, sha_ni);
    for (size_t i = 0; i < len; i += chunk) tsm_sha256_update(&c, (const char *)data + i, len - i < chunk ? len - i : chunk);
    tsm_sha256_final(&c, d);
    tsm_hex(d, 32, out);
}

static void test_sha256(void) {
    char h[65];
    sha_hex("", 0, 1, h);
    CHECK_MSG(!strcmp(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"), "%s", h);
    sha_hex("abc", 3, 1, h);
    CHECK_MSG(!strcmp(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"), "%s", h);
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    for (size_t chunk = 1; chunk <= 64; chunk *= 3) {
        sha_hex(m448, strlen(m448), chunk, h);
        CHECK_MSG(!strcmp(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"), "%s", h);
    }
    static char million[1000000];
    memset(million, 'a', sizeof million);
    sha_hex(million, sizeof million, 4093, h);
    CHECK_MSG(!strcmp(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"), "%s", h);
}

/* The SHA extensions' digests against the portable ones: FIPS's vectors, and random
 * inputs of every length up to 300 bytes fed in pieces of 1 to 130 bytes. */
static void test_sha256_ni(void) {
    if (!(tsr_cpu_features() & TSR_CPU_SHA)) {
        printf("  (no SHA extensions on this CPU: only the portable SHA-256 is tested)\n");
        return;
    }
    sha_ni = 1;
    test_sha256();
    static unsigned char buf[300];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (unsigned char)((x = x * 1103515245u + 12345u) >> 24);
    int same = 1;
    for (size_t len = 0; len <= sizeof buf; len++)
        for (size_t chunk = 1; chunk <= 130; chunk += 43) {
            char a[65], b[65];
            sha_ni = 0;
            sha_hex(buf, len, chunk, a);
            sha_ni = 1;
            sha_hex(buf, len, chunk, b);
            same &= !strcmp(a, b);
        }
    sha_ni = 0;
    CHECK(same);
    unsigned char d0[32], d1[32];
    tsm_model_sha256(model, 0, d0);
    tsm_model_sha256(model, 1, d1);
    CHECK(!memcmp(d0, d1, sizeof d0));
}

int main(void) {
    unsetenv("TREESCORE_WISDOM");
    unsetenv("TREESCORE_PLAN");
    setenv("TREESCORE_PLAN_MS", "10", 1);
    tsr_config_reload();
    if (tsr_make_temp_dir(tsr_tmp_dir(), "treescore-test-trust-", root, sizeof root) != 0) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(marker, sizeof marker, "%s/MARKER", root);
    ts_error err;
    CHECK_STATUS(ts_model_load_file(TS_TEST_DATA_DIR "/models/lgb_small_lambdarank.txt", TS_FORMAT_AUTO, &model, &err),
                 TS_OK);
    char dir[TSR_PATH_MAX + 32];
    make_dir("first", 0700, dir, sizeof dir);
    RUN_TEST(test_sha256);
    RUN_TEST(test_sha256_ni);
    RUN_TEST(test_seal);
    if (model) {
        RUN_TEST(test_wisdom);
        RUN_TEST(test_wisdom_not_ours);
        free(prepare_ifelse(dir, TS_ENGINE_IFELSE, NULL)); /* learn the object's name */
        find_object(dir, so_name, sizeof so_name);
    }
    if (!model || !so_name[0] || build_planted() != 0) {
        fprintf(stderr, "no C compiler (or no model): the planted-object scenarios are skipped\n");
    } else {
        RUN_TEST(test_descriptor_names);
        RUN_TEST(test_unsafe_parent);
        RUN_TEST(test_planted_object_would_run);
        RUN_TEST(test_world_writable_dir);
        RUN_TEST(test_object_writable);
        RUN_TEST(test_object_other_owner);
        RUN_TEST(test_object_symlink);
        RUN_TEST(test_damaged_object);
        RUN_TEST(test_compile_timeout);
        CHECK(!exists(marker));
    }
    ts_model_free(model);
    remove_tree(root);
    return check_summary("test_cache_trust");
}
