/* ifelse.h: what the planner may ask the ifelse engine besides the engine interface. */
#ifndef TS_ENGINES_IFELSE_H
#define TS_ENGINES_IFELSE_H

#include "model/forest.h"

/* 1 when this model's shared object, built by the compiler and flags ifelse would use
 * now, is in the cache directory and both pass the trust check of artifacts.h (so
 * preparing ifelse is a load, not a compile); else 0. Runs no compiler. */
int tse_ifelse_cached(const ts_model *m);

#endif /* TS_ENGINES_IFELSE_H */
