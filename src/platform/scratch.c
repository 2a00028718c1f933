/* scratch.c: one growable 64-byte aligned buffer per thread, freed at thread exit by a pthread key. */
#include "platform/scratch.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#define ALIGN 64

/* This thread's buffer and its size; the key holds the same pointer so that the
 * destructor frees it when the thread exits (the main thread's stays until exit). */
static _Thread_local void *buffer;
static _Thread_local size_t capacity;

static pthread_key_t key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static int key_ok;

/* Runs at thread exit with the key's value: the current buffer. It also forgets the
 * thread-local pointer, in case a later destructor asks for scratch again. */
static void release(void *p) {
    free(p);
    buffer = NULL;
    capacity = 0;
}

static void make_key(void) {
    key_ok = pthread_key_create(&key, release) == 0;
}

/* `bytes` rounded up to a multiple of ALIGN; 0 on overflow. */
static size_t round_up(size_t bytes) {
    if (bytes > SIZE_MAX - (ALIGN - 1)) return 0;
    return (bytes + ALIGN - 1) & ~(size_t)(ALIGN - 1);
}

static void *aligned(size_t size) {
    void *p = NULL;
    if (size == 0 || posix_memalign(&p, ALIGN, size) != 0) return NULL;
    return p;
}

/* Grows to max(bytes, 2 * capacity) (or, if that fails, exactly bytes rounded up), so a
 * thread asking for slowly growing sizes reallocates only O(log) times. The old buffer
 * is freed only once the new one exists. */
void *tsr_scratch(size_t bytes) {
    if (bytes == 0) bytes = 1;
    if (buffer && bytes <= capacity) return buffer;
    size_t need = round_up(bytes);
    if (need == 0) return NULL;
    size_t want = capacity <= SIZE_MAX / 2 && 2 * capacity > need ? round_up(2 * capacity) : need;
    void *p = want ? aligned(want) : NULL;
    if (!p && want != need) p = aligned(want = need);
    if (!p) return NULL;
    pthread_once(&key_once, make_key);
    if (key_ok && pthread_setspecific(key, p) != 0) {
        free(p);
        return NULL;
    }
    free(buffer);
    buffer = p;
    capacity = want;
    return p;
}
