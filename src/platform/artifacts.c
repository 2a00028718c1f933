/* artifacts.c: trusted access to the cache directory (openat, O_NOFOLLOW, fstat checks), atomic replacement, loading shared objects through checked descriptors. */
/* realpath and S_ISVTX are XSI interfaces, declared by glibc with _DEFAULT_SOURCE. */
#define _DEFAULT_SOURCE 1

#include "platform/artifacts.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "platform/cachedir.h"
#include "platform/config.h"
#include "platform/notes.h"

/* ---- checks ------------------------------------------------------------------------------ */

int tsr_fd_trusted(int fd, int want_dir, char *why, size_t size) {
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(why, size, "cannot stat it: %s", strerror(errno));
        return -1;
    }
    if (want_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
        snprintf(why, size, "it is not a %s", want_dir ? "directory" : "regular file");
        return -1;
    }
    if (st.st_uid != geteuid()) {
        snprintf(why, size, "it is owned by uid %lu, not by this user (uid %lu)", (unsigned long)st.st_uid,
                 (unsigned long)geteuid());
        return -1;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(why, size, "it is writable by %s (mode %04o)", st.st_mode & S_IWOTH ? "others" : "its group",
                 (unsigned)(st.st_mode & 07777));
        return -1;
    }
    return 0;
}

int tsr_open_trusted(int dirfd, const char *name, char *why, size_t size) {
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        snprintf(why, size, e == ELOOP ? "it is a symbolic link" : "cannot open it: %s", strerror(e));
        errno = e;
        return e == ELOOP ? -2 : -1;
    }
    if (tsr_fd_trusted(fd, 0, why, size) != 0) {
        close(fd);
        return -2;
    }
    return fd;
}

int tsr_open_own(int dirfd, const char *name, unsigned mode, char *why, size_t size) {
    int fd = openat(dirfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        snprintf(why, size, "cannot open it: %s", strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid()) fchmod(fd, (mode_t)mode);
    if (tsr_fd_trusted(fd, 0, why, size) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* 1 when fd's file is empty or starts with magic. */
static int starts_with(int fd, const char *magic) {
    struct stat st;
    size_t n = strlen(magic);
    char head[64];
    if (fstat(fd, &st) != 0) return 0;
    if (st.st_size == 0) return 1;
    return n <= sizeof head && pread(fd, head, n, 0) == (ssize_t)n && memcmp(head, magic, n) == 0;
}

int tsr_open_append(int dirfd, const char *name, const char *magic, char *why, size_t size) {
    const int flags = O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;
    int fd = openat(dirfd, name, flags);
    if (fd < 0 && errno == ENOENT) { /* a new file; never one that appeared meanwhile */
        fd = openat(dirfd, name, flags | O_CREAT | O_EXCL, 0600);
        if (fd < 0 && errno == EEXIST) fd = openat(dirfd, name, flags);
    }
    if (fd < 0) {
        snprintf(why, size, errno == ELOOP ? "it is a symbolic link" : "cannot open it: %s", strerror(errno));
        return -1;
    }
    if (tsr_fd_trusted(fd, 0, why, size) != 0) {
        close(fd);
        return -1;
    }
    if (!starts_with(fd, magic)) {
        snprintf(why, size, "it is not empty and does not start with '%s'", magic);
        close(fd);
        return -2;
    }
    return fd;
}

int tsr_lock_wait(int dirfd, const char *name, double max_wait_s, int *waited) {
    char why[TSR_WHY_SIZE];
    *waited = 0;
    int fd = openat(dirfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
    if (fd < 0) return -1;
    if (tsr_fd_trusted(fd, 0, why, sizeof why) != 0) {
        close(fd);
        return -1;
    }
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR) break; /* no locks here (NFS): go on without */
        *waited = 1;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (max_wait_s > 0 && (double)(now.tv_sec - t0.tv_sec) + 1e-9 * (double)(now.tv_nsec - t0.tv_nsec) > max_wait_s)
            break;
        struct timespec nap = {0, 20000000};
        nanosleep(&nap, NULL);
    }
    return fd; /* closing it releases the lock (a process that dies releases it too) */
}

char *tsr_read_trusted(int dirfd, const char *name, size_t max_bytes, size_t *len, char *why, size_t size) {
    int fd = tsr_open_trusted(dirfd, name, why, size);
    if (fd < 0 && errno == ENOENT) why[0] = '\0'; /* missing: nothing to say */
    if (fd < 0) return NULL;
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) == 0 && (uint64_t)st.st_size <= max_bytes) buf = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (buf && got < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    if (!buf) {
        snprintf(why, size, "it is larger than %zu bytes, or out of memory", max_bytes);
        return NULL;
    }
    buf[got] = '\0';
    *len = got;
    return buf;
}

int tsr_replace_file(int dirfd, const char *name, const void *data, size_t len) {
    char tmp[256];
    static atomic_uint counter;
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 16; tries++) {
        snprintf(tmp, sizeof tmp, ".%.180s.%ld.%u.tmp", name, (long)getpid(), atomic_fetch_add(&counter, 1));
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST) return -1;
    }
    if (fd < 0) return -1;
    const char *p = data;
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, p + done, len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        done += (size_t)w;
    }
    int ok = done == len && close(fd) == 0;
    if (!ok || renameat(dirfd, tmp, dirfd, name) != 0) {
        unlinkat(dirfd, tmp, 0);
        return -1;
    }
    return 0;
}

int tsr_copy_into(int dirfd, const char *name, const char *src_path, unsigned mode) {
    int in = open(src_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (in < 0) return -1;
    char tmp[256];
    static atomic_uint counter;
    snprintf(tmp, sizeof tmp, ".%.180s.%ld.%u.tmp", name, (long)getpid(), atomic_fetch_add(&counter, 1));
    int out = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, (mode_t)mode);
    if (out < 0) {
        close(in);
        return -1;
    }
    char buf[65536];
    int ok = 1;
    for (;;) {
        ssize_t r = read(in, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) ok = 0;
        if (r <= 0) break;
        for (ssize_t done = 0; ok && done < r;) {
            ssize_t w = write(out, buf + done, (size_t)(r - done));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) ok = 0;
            else done += w;
        }
        if (!ok) break;
    }
    close(in);
    if (ok) ok = fchmod(out, (mode_t)mode) == 0 && fsync(out) == 0;
    if (close(out) != 0) ok = 0;
    if (!ok || renameat(dirfd, tmp, dirfd, name) != 0) {
        unlinkat(dirfd, tmp, 0);
        return -1;
    }
    return 0;
}

int tsr_path_safe(const char *path, char *why, size_t size) {
    char *real = realpath(path, NULL);
    if (!real) {
        snprintf(why, size, "cannot resolve it: %s", strerror(errno));
        return -1;
    }
    int rc = 0;
    size_t len = strlen(real);
    /* every ancestor: "/", "/a", "/a/b", ... up to the parent of real */
    for (size_t end = 1; rc == 0 && end <= len; end++) {
        if (end < len && real[end] != '/') continue;
        if (end == len) break; /* real itself is checked by the caller */
        char save = real[end];
        real[end] = '\0';
        struct stat st;
        const char *dir = end == 0 || real[0] == '\0' ? "/" : real;
        if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
            snprintf(why, size, "%.200s is not a directory", dir);
            rc = -1;
        } else if (st.st_uid != 0 && st.st_uid != geteuid()) {
            snprintf(why, size, "its ancestor %.200s is owned by uid %lu", dir, (unsigned long)st.st_uid);
            rc = -1;
        } else if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
            snprintf(why, size, "its ancestor %.200s is writable by others and not sticky", dir);
            rc = -1;
        }
        real[end] = save;
    }
    if (rc == 0) { /* the root itself */
        struct stat st;
        if (lstat("/", &st) == 0 && st.st_uid != 0 && st.st_uid != geteuid()) {
            snprintf(why, size, "/ is owned by uid %lu", (unsigned long)st.st_uid);
            rc = -1;
        }
    }
    free(real);
    return rc;
}

/* ---- the cache directory ------------------------------------------------------------------ */

int tsr_absolute(const char *path, char *out, size_t size) {
    if (path[0] == '/') {
        int n = snprintf(out, size, "%s", path);
        return n > 0 && (size_t)n < size ? 0 : -1;
    }
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) return -1;
    int n = snprintf(out, size, "%s/%s", strcmp(cwd, "/") ? cwd : "", path);
    return n > 0 && (size_t)n < size ? 0 : -1;
}

int tsr_cache_open(tsr_cache *c, int create) {
    char raw[sizeof c->path];
    c->fd = -1;
    c->trusted = 0;
    c->error = 0;
    c->path[0] = '\0';
    if (tsr_cache_dir(raw, sizeof raw, 0) != 0) {
        const tsr_config *cf = tsr_config_get();
        if ((cf->cache_dir && *cf->cache_dir) || (cf->xdg_cache_home && *cf->xdg_cache_home == '/') ||
            (cf->home && *cf->home)) /* set, but too long: "no cache directory (set ...)" misled */
            snprintf(c->why, sizeof c->why, "no cache directory: its path (TREESCORE_CACHE_DIR, else "
                                            "XDG_CACHE_HOME or HOME) is longer than %zu bytes", sizeof raw - 1);
        else
            snprintf(c->why, sizeof c->why, "no cache directory (set TREESCORE_CACHE_DIR, XDG_CACHE_HOME or HOME)");
        return -1;
    }
    errno = 0;
    if (create && tsr_cache_dir(raw, sizeof raw, 1) != 0) {
        c->error = errno ? errno : ENOTDIR; /* mkdir_p's stat found a non-directory */
        if (tsr_absolute(raw, c->path, sizeof c->path) != 0) snprintf(c->path, sizeof c->path, "%.4000s", raw);
        snprintf(c->why, sizeof c->why, "cannot make it a directory: %s", strerror(c->error));
        return -1;
    }
    return tsr_dir_open(c, raw);
}

int tsr_dir_open(tsr_cache *c, const char *path) {
    c->fd = -1;
    c->trusted = 0;
    c->error = 0;
    c->why[0] = '\0';
    c->path[0] = '\0';
    if (tsr_absolute(path, c->path, sizeof c->path) != 0) {
        snprintf(c->why, sizeof c->why, "the path is too long");
        return -1;
    }
    c->fd = open(c->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (c->fd < 0) {
        c->error = errno;
        snprintf(c->why, sizeof c->why, "cannot open it: %s", strerror(errno));
        return -1;
    }
    char why[TSR_WHY_SIZE - 64];
    if (tsr_fd_trusted(c->fd, 1, why, sizeof why) == 0) c->trusted = 1;
    else snprintf(c->why, sizeof c->why, "%s", why);
    return 0;
}

void tsr_cache_close(tsr_cache *c) {
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
}

void tsr_cache_warn_unusable(const tsr_cache *c, const char *instead) {
    static atomic_int warned;
    /* ENOENT: not made yet, unless making it failed so (mkdir under /proc) */
    int failed_mkdir = strncmp(c->why, "cannot make", 11) == 0;
    if (c->fd >= 0 || !c->path[0] || c->error == 0 || (c->error == ENOENT && !failed_mkdir)) return;
    tsr_note_once(&warned, "treescore: cannot use the cache directory %s: %s; %s", c->path, c->why, instead);
}

void tsr_cache_warn_untrusted(const tsr_cache *c, const char *instead) {
    static atomic_int warned;
    tsr_note_once(&warned,
                  "treescore: not using the cache directory %s: %s (it must be owned by this user and not "
                  "writable by group or others); %s",
                  c->path, c->why, instead);
}

/* ---- integrity of cached objects ------------------------------------------------------------ */

/* XXH64 (Yann Collet's xxHash, 64-bit, seed 0), streamed over whole 32-byte stripes and
 * a tail: a fast hash that catches truncation and overwritten bytes (the trust checks,
 * not the hash, keep out other users). */
#define XP1 0x9E3779B185EBCA87ull
#define XP2 0xC2B2AE3D27D4EB4Full
#define XP3 0x165667B19E3779F9ull
#define XP4 0x85EBCA77C2B2AE63ull
#define XP5 0x27D4EB2F165667C5ull

typedef struct hash64 {
    uint64_t v[4];  /* the four lanes */
    uint64_t len;   /* bytes of whole stripes so far */
} hash64;

static uint64_t rotl64(uint64_t x, int r) { return x << r | x >> (64 - r); }
static uint64_t read64(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}
static uint64_t xround(uint64_t acc, uint64_t in) { return rotl64(acc + in * XP2, 31) * XP1; }
static uint64_t xmerge(uint64_t acc, uint64_t v) { return (acc ^ xround(0, v)) * XP1 + XP4; }

static void hash64_init(hash64 *h) {
    h->v[0] = XP1 + XP2;
    h->v[1] = XP2;
    h->v[2] = 0;
    h->v[3] = 0 - XP1;
    h->len = 0;
}

/* n a multiple of 32 */
static void hash64_stripes(hash64 *h, const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i += 32)
        for (int l = 0; l < 4; l++) h->v[l] = xround(h->v[l], read64(p + i + 8 * (size_t)l));
    h->len += n;
}

/* the last n < 32 bytes */
static uint64_t hash64_final(const hash64 *h, const unsigned char *p, size_t n) {
    uint64_t acc = XP5;
    if (h->len >= 32) {
        acc = rotl64(h->v[0], 1) + rotl64(h->v[1], 7) + rotl64(h->v[2], 12) + rotl64(h->v[3], 18);
        for (int l = 0; l < 4; l++) acc = xmerge(acc, h->v[l]);
    }
    acc += h->len + n;
    for (; n >= 8; p += 8, n -= 8) acc = rotl64(acc ^ xround(0, read64(p)), 27) * XP1 + XP4;
    if (n >= 4) {
        uint32_t w;
        memcpy(&w, p, 4);
        acc = rotl64(acc ^ (uint64_t)w * XP1, 23) * XP2 + XP3;
        p += 4;
        n -= 4;
    }
    for (; n > 0; p++, n--) acc = rotl64(acc ^ *p * XP5, 11) * XP1;
    acc = (acc ^ acc >> 33) * XP2;
    acc = (acc ^ acc >> 29) * XP3;
    return acc ^ acc >> 32;
}

uint64_t tsr_hash64(const void *data, size_t len) {
    hash64 h;
    hash64_init(&h);
    hash64_stripes(&h, data, len / 32 * 32);
    return hash64_final(&h, (const unsigned char *)data + len / 32 * 32, len % 32);
}

/* The record: SEAL_MAGIC, the size of what it seals, its hash (native byte order: an
 * object is only ever loaded on the kind of machine that built it). */
static const char SEAL_MAGIC[8] = {'t', 's', 's', 'e', 'a', 'l', '0', '1'};

/* The hash of the first n bytes of fd, read with pread. 0 or -1 (a read error, or the
 * file is shorter than n). */
static int hash_fd(int fd, uint64_t n, uint64_t *out) {
    enum { CHUNK = 1 << 18 }; /* a multiple of 32 */
    unsigned char *buf = malloc(CHUNK);
    if (!buf) return -1;
    hash64 h;
    hash64_init(&h);
    uint64_t off = 0;
    int rc = 0;
    while (rc == 0) {
        size_t want = n - off < CHUNK ? (size_t)(n - off) : CHUNK, got = 0;
        while (got < want) {
            /* want <= CHUNK; the bound only tells gcc 13's fortified pread so (it warned
             * of a write past buf otherwise) */
            size_t ask = want - got <= (size_t)CHUNK - got ? want - got : (size_t)CHUNK - got;
            ssize_t r = pread(fd, buf + got, ask, (off_t)(off + got));
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            got += (size_t)r;
        }
        if (got < want) rc = -1;
        else if (want == CHUNK && off + want < n) hash64_stripes(&h, buf, want);
        else {
            hash64_stripes(&h, buf, want / 32 * 32);
            *out = hash64_final(&h, buf + want / 32 * 32, want % 32);
            break;
        }
        off += want;
    }
    free(buf);
    return rc;
}

static int write_all_at(int fd, const void *data, size_t len, off_t at) {
    const char *p = data;
    for (size_t done = 0; done < len;) {
        ssize_t w = pwrite(fd, p + done, len - done, at + (off_t)done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        done += (size_t)w;
    }
    return 0;
}

int tsr_seal_fd(int fd, char *why, size_t size) {
    struct stat st;
    uint64_t n, hash;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, size, "cannot stat the object to seal it");
        return -1;
    }
    n = (uint64_t)st.st_size;
    unsigned char rec[TSR_SEAL_BYTES];
    if (hash_fd(fd, n, &hash) != 0) {
        snprintf(why, size, "cannot read the object to seal it: %s", strerror(errno));
        return -1;
    }
    memcpy(rec, SEAL_MAGIC, 8);
    memcpy(rec + 8, &n, 8);
    memcpy(rec + 16, &hash, 8);
    if (write_all_at(fd, rec, sizeof rec, st.st_size) != 0 || fsync(fd) != 0) {
        snprintf(why, size, "cannot write its integrity record: %s", strerror(errno));
        return -1;
    }
    return 0;
}

int tsr_check_seal(int fd, int full, char *why, size_t size) {
    struct stat st;
    unsigned char rec[TSR_SEAL_BYTES];
    uint64_t n, want, hash;
    if (fstat(fd, &st) != 0 || st.st_size < TSR_SEAL_BYTES ||
        pread(fd, rec, sizeof rec, st.st_size - TSR_SEAL_BYTES) != TSR_SEAL_BYTES ||
        memcmp(rec, SEAL_MAGIC, 8) != 0) {
        snprintf(why, size, "it is damaged: no integrity record at its end (truncated, or not written by treescore)");
        return -1;
    }
    memcpy(&n, rec + 8, 8);
    memcpy(&want, rec + 16, 8);
    if (n != (uint64_t)st.st_size - TSR_SEAL_BYTES) {
        snprintf(why, size, "it is damaged: %llu bytes where its record says %llu", (unsigned long long)st.st_size,
                 (unsigned long long)n + TSR_SEAL_BYTES);
        return -1;
    }
    if (full && (hash_fd(fd, n, &hash) != 0 || hash != want)) {
        snprintf(why, size, "it is damaged: its content does not match its integrity record's hash");
        return -1;
    }
    return 0;
}

/* ---- loading shared objects ------------------------------------------------------------------ */

/* The dynamic loader returns an object already loaded under the same name, so each load
 * gets a name of its own: /proc/self/fd, then 32 components "." joined by "/" or "//"
 * (the bits of a load counter), then N. All spell the same descriptor; no two loads
 * share a name, and the descriptor can be closed as soon as the object is mapped. */
static void unique_fd_name(int fd, char *out, size_t size) {
    static atomic_uint loads;
    unsigned n = atomic_fetch_add(&loads, 1u);
    size_t used = (size_t)snprintf(out, size, "/proc/self/fd");
    for (int b = 0; b < 32 && used + 4 < size; b++) used += (size_t)snprintf(out + used, size - used, "%s.", n >> b & 1u ? "//" : "/");
    snprintf(out + used, size - used, "/%d", fd);
}

void *tsr_load_fd(int fd, const char *fallback, char *why, size_t size) {
    char name[160];
    snprintf(name, sizeof name, "/proc/self/fd/%d", fd);
    int have_proc = access(name, F_OK) == 0;
    void *h = NULL;
    if (have_proc) {
        unique_fd_name(fd, name, sizeof name);
        h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    } else if (fallback) {
        h = dlopen(fallback, RTLD_NOW | RTLD_LOCAL);
    } else {
        snprintf(why, size, "no /proc/self/fd to load a checked file through");
        close(fd);
        return NULL;
    }
    if (!h) {
        const char *e = dlerror();
        /* "/proc/self/fd/./././...//./4: file too short": the name is ours, not the user's */
        size_t n = have_proc ? strlen(name) : 0;
        if (e && n && strncmp(e, name, n) == 0 && strncmp(e + n, ": ", 2) == 0) e += n + 2;
        snprintf(why, size, "%s", e ? e : "dlopen failed");
    }
    close(fd); /* the object is mapped: its descriptor is no longer needed */
    return h;
}

void tsr_unload(void *handle) {
    if (handle) dlclose(handle);
}

/* ---- removing build directories ------------------------------------------------------------ */

void tsr_remove_dir_at(int dirfd, const char *name) {
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_uid != geteuid()) {
        close(fd);
        return;
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlinkat(fd, e->d_name, 0);
    closedir(d); /* closes fd */
    unlinkat(dirfd, name, AT_REMOVEDIR);
}

void tsr_remove_stale_dirs_at(int dirfd, const char *prefix, double max_age_s) {
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    size_t plen = strlen(prefix);
    time_t now = time(NULL);
    for (struct dirent *e; (e = readdir(d));) {
        struct stat st;
        if (strncmp(e->d_name, prefix, plen) != 0) continue;
        if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
            continue;
        if (difftime(now, st.st_mtime) > max_age_s) tsr_remove_dir_at(fd, e->d_name);
    }
    closedir(d);
}
