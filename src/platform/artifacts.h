/* artifacts.h: the one module for files treescore keeps on disk (ifelse's shared objects, the planner's wisdom): the trust model, no-follow file access, loading checked code. */
#ifndef TS_PLATFORM_ARTIFACTS_H
#define TS_PLATFORM_ARTIFACTS_H

#include <stddef.h>
#include <stdint.h>

/*
 * Trust model
 * -----------
 * Code loaded from the cache directory runs inside the caller's process, so a file is
 * only read from there (dlopen'ed, or parsed as wisdom) when nobody but this user (and
 * root) could have written it:
 *   - the directory is owned by the effective user and not writable by group or others;
 *   - the file is a regular file (not a symbolic link: opened with O_NOFOLLOW), owned by
 *     the effective user and not writable by group or others.
 * The checks are made with fstat on an open descriptor, and the object is loaded through
 * that same descriptor (/proc/self/fd/N), so the checked file is the loaded file. Files
 * are created with mode 0600 (objects 0700 after the link), directories with 0700, all
 * through the directory's descriptor (openat, unlinkat, renameat) so that no path is
 * resolved twice. Paths are absolute (a relative directory is made absolute first), so
 * that no path starts with '-' on a compiler's command line.
 * When the directory fails the check, nothing is read from or written to it: ifelse
 * compiles into a private temporary directory (mkdtemp, 0700) and loads from there;
 * the planner neither reads nor writes wisdom. A warning says so once per process.
 */

#define TSR_WHY_SIZE 384

/* The cache directory, opened. */
typedef struct tsr_cache {
    int fd;                 /* O_DIRECTORY descriptor, -1 when closed */
    int trusted;            /* 1 when it passed the check above */
    char path[4096];        /* absolute */
    char why[TSR_WHY_SIZE]; /* why it is not trusted (or could not be opened) */
    int error;              /* errno of a failed open or mkdir (ENOENT: not made yet), else 0 */
} tsr_cache;

/* Open the cache directory (tsr_cache_dir's path, made absolute; with create, missing
 * directories are made with mode 0700). Returns 0 with c->fd open (check c->trusted),
 * or -1 with c->fd == -1 and the reason in c->why. */
int tsr_cache_open(tsr_cache *c, int create);
void tsr_cache_close(tsr_cache *c);
/* After a failed open: say once why the directory cannot be used (a path that is a file,
 * under a file, unreadable, or could not be made), unless it merely does not exist yet;
 * `instead` says what happens instead. */
void tsr_cache_warn_unusable(const tsr_cache *c, const char *instead);

/* The same for any directory path (not created): 0 with c->fd open, or -1. */
int tsr_dir_open(tsr_cache *c, const char *path);

/* Warn once per process (a TSR_NOTE_WARN note) that c is not trusted, and what is done
 * instead (`instead`, e.g. "compiling in a private temporary directory"). */
void tsr_cache_warn_untrusted(const tsr_cache *c, const char *instead);

/* 0 when the open descriptor fd passes the check (a directory when want_dir, else a
 * regular file; owned by the effective user; not writable by group or others); -1 and
 * the reason in why. */
int tsr_fd_trusted(int fd, int want_dir, char *why, size_t size);

/* Open `name` (relative to dirfd, or a path with AT_FDCWD) read-only, without following
 * a symbolic link in its last component, and check it (tsr_fd_trusted). The descriptor;
 * -1 when it cannot be opened (missing), -2 when it is there but fails the check (a
 * symbolic link, another owner, writable by others...); the reason in why. */
int tsr_open_trusted(int dirfd, const char *name, char *why, size_t size);

/* A file this process just made (a linked object in its private directory): open it
 * read-write (to seal it) without following links, set its mode (when owned by this
 * user), check it. The descriptor, or -1 with why. */
int tsr_open_own(int dirfd, const char *name, unsigned mode, char *why, size_t size);

/* Open `name` for appending, only where it is a file of the caller's kind: one that
 * starts with `magic` (at most 64 bytes), or is empty. A missing file is created 0600
 * with O_EXCL (never one that appeared meanwhile); a symbolic link is refused; the file
 * is checked (tsr_fd_trusted). The descriptor (open read-write, O_APPEND); -1 with why
 * when it cannot be opened or fails the check; -2 with why when it holds other data
 * (then it is left exactly as it was: a misconfigured path never destroys a file). */
int tsr_open_append(int dirfd, const char *name, const char *magic, char *why, size_t size);

/* Replace `name` in dirfd with `len` bytes of data, atomically (a new file 0600 with a
 * unique name, renamed over it). 0 or -1. */
int tsr_replace_file(int dirfd, const char *name, const void *data, size_t len);

/* Copy the file at src_path (a file of ours in a private directory; not followed when a
 * link) into dirfd as `name` with `mode`, atomically (a unique temporary name, synced,
 * renamed over name). 0 or -1. */
int tsr_copy_into(int dirfd, const char *name, const char *src_path, unsigned mode);

/* 0 when no one but this user and root can rename or replace `path` (a directory):
 * every ancestor of its resolved path is owned by root or this user, and writable by
 * group or others only when sticky (as /tmp). -1 with why otherwise. A directory that
 * passes is safe to build in through paths (the compiler gets paths, not descriptors);
 * loading needs no such check (it goes through descriptors). */
int tsr_path_safe(const char *path, char *why, size_t size);

/* Take the advisory lock (flock) of `name` in dirfd, made 0600 when missing and checked
 * like a trusted file, waiting for another process that holds it up to max_wait_s (0:
 * without limit): processes that would all make the same file take turns. The
 * descriptor to close to release it (after max_wait_s or where there are no locks: not
 * locked, still a descriptor), or -1 (no such file could be made or it is not trusted:
 * go on without). *waited: 1 when another process held it. */
int tsr_lock_wait(int dirfd, const char *name, double max_wait_s, int *waited);

/* Read a whole trusted file (tsr_open_trusted) of at most max_bytes into a malloc'd,
 * NUL-terminated buffer. NULL when missing (why is ""), untrusted, unreadable or larger
 * (why says). */
char *tsr_read_trusted(int dirfd, const char *name, size_t max_bytes, size_t *len, char *why, size_t size);

/* Integrity of cached objects
 * ---------------------------
 * A crash or a full disk while an object is written could leave a truncated or partly
 * written file, and dlopen of such a file dies of SIGBUS. So every object kept in the
 * cache ends in a record of TSR_SEAL_BYTES: the magic "tsseal01", the size of the bytes
 * before it and their 64-bit hash (XXH64). The record is appended (and the file synced)
 * before the object is renamed into the cache; before a cached object is loaded, its
 * record is checked on the descriptor that is then loaded (size and hash), and an object
 * that fails is never loaded (ifelse warns and compiles it again). The dynamic loader
 * ignores bytes past what the ELF headers describe. */
#define TSR_SEAL_BYTES 24

/* Append the record to fd (a regular file of ours, open for writing, complete) and fsync
 * it. 0, or -1 with why. */
int tsr_seal_fd(int fd, char *why, size_t size);

/* 0 when fd's file ends in a record matching its size and (when full) the hash of its
 * content; -1 with why ("it is damaged: ..."). Reads through pread: fd's offset stays. */
int tsr_check_seal(int fd, int full, char *why, size_t size);

/* XXH64 with seed 0 of data[0, len). */
uint64_t tsr_hash64(const void *data, size_t len);

/* Load a shared object through its checked descriptor fd (closed by this call), under a
 * name of its own (/proc/self/fd/.../N: the dynamic loader would return an object loaded
 * earlier under the same name). Where /proc is missing, `fallback` (a path in a private
 * directory of ours, or NULL) is loaded instead. The handle, or NULL with dlerror's text
 * in why. Thread-safe. Release with tsr_unload. */
void *tsr_load_fd(int fd, const char *fallback, char *why, size_t size);
void tsr_unload(void *handle);

/* Make `path` absolute (relative to the working directory) into out. 0 or -1. */
int tsr_absolute(const char *path, char *out, size_t size);

/* Remove directory `name` in dirfd (AT_FDCWD for a path): its entries (unlinkat, never
 * following links; subdirectories are not descended), then itself. Only a directory
 * owned by the effective user is touched. Errors are ignored. */
void tsr_remove_dir_at(int dirfd, const char *name);

/* Remove the directories named `prefix`* in dirfd owned by the effective user whose
 * modification time is more than max_age_s seconds ago (builds whose process died). */
void tsr_remove_stale_dirs_at(int dirfd, const char *prefix, double max_age_s);

#endif /* TS_PLATFORM_ARTIFACTS_H */
