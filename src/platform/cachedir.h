/* cachedir.h: where treescore keeps files between runs (ifelse's shared objects, the planner's wisdom). */
#ifndef TS_PLATFORM_CACHEDIR_H
#define TS_PLATFORM_CACHEDIR_H

#include <stddef.h>

/* The cache directory: TREESCORE_CACHE_DIR, else $XDG_CACHE_HOME/treescore, else
 * $HOME/.cache/treescore. With create, missing directories are made (mode 0700, like
 * mkdir -p -m 0700; artifacts.h has the trust model). Returns 0 and the path in buf, or
 * -1 when there is no HOME, the path does not fit, or (with create) a directory cannot
 * be made. */
int tsr_cache_dir(char *buf, size_t size, int create);

#endif /* TS_PLATFORM_CACHEDIR_H */
