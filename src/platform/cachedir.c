/* cachedir.c: the cache directory's path (environment, XDG, HOME) and mkdir -p (mode 0700). */
#include "platform/cachedir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "platform/config.h"

static int mkdir_p(char *path) {
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        int rc = mkdir(path, 0700);
        *p = '/';
        if (rc != 0 && errno != EEXIST) return -1;
    }
    if (mkdir(path, 0700) != 0 && errno != EEXIST) return -1;
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}

int tsr_cache_dir(char *buf, size_t size, int create) {
    const tsr_config *c = tsr_config_get();
    const char *env = c->cache_dir, *xdg = c->xdg_cache_home, *home = c->home;
    int n;
    if (env && *env) n = snprintf(buf, size, "%s", env);
    else if (xdg && *xdg == '/') n = snprintf(buf, size, "%s/treescore", xdg);
    else if (home && *home) n = snprintf(buf, size, "%s/.cache/treescore", home);
    else return -1;
    if (n < 0 || (size_t)n >= size) return -1;
    return create ? mkdir_p(buf) : 0;
}
