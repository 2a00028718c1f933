/* test_loaders.c: unit tests of the model loaders (LightGBM, XGBoost JSON, QuickRank XML) and format detection. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "io/loaders.h"
#include "model/forest.h"
#include "treescore.h"

#ifndef TS_TEST_DATA_DIR
#define TS_TEST_DATA_DIR "tests/data"
#endif

/*
 * Reference scores below were computed by the training libraries themselves on the
 * rows listed (see tests/data/PROVENANCE.md): LightGBM 4.7.0 Booster.predict(rows,
 * raw_score=True) and XGBoost 3.2.0 / 1.7.6 Booster.inplace_predict(rows,
 * predict_type="margin"), rows as float32. Floats and doubles are written in hex so the
 * values are exact. The rows include values exactly on split thresholds and one float
 * above, NaN, +-0, +-1e-36 (snapped to 0 by LightGBM) and all-NaN / all-zero rows.
 */

/* LightGBM lgb_small_zero_missing.txt (regression, zero_as_missing=True) and
 * lgb_small_lambdarank.txt (lambdarank, NaN missing type): bit-exact. */
static const float lgb_zero_rows[][5] = {
    {0x1.427a320000000p-10f, 0x1.31ea5a0000000p-2f, -0x1.0000000000000p+0f, -0x1.c7fba80000000p-1f, -0x1.d195380000000p-2f},
    {-0x1.fbb9180000000p-1f, 0x1.ecb2460000000p-5f, 0x1.8000000000000p+1f, -0x1.f804fc0000000p-2f, -0x1.3daee20000000p-1f},
    {0x1.f599280000000p-2f, NAN, 0.0f, -0x1.dc664e0000000p-1f, -0x1.df430a0000000p-6f},
    {0x1.63fec80000000p-1f, -0x1.581e720000000p+0f, -0x1.0000000000000p+0f, 0.0f, -0x1.4a1f260000000p+0f},
    {-0x1.d3e9280000000p-2f, NAN, -0x1.0000000000000p+0f, -0x1.8e7cbc0000000p-4f, 0x1.41cbbc0000000p+0f},
    {-0x1.d3e9260000000p-2f, NAN, -0x1.0000000000000p+0f, -0x1.8e7cbc0000000p-4f, 0x1.41cbbc0000000p+0f},
    {0x1.8342960000000p-1f, -0x1.36f7fe0000000p-2f, 0x1.0000000000000p+0f, -0x1.eeacfe0000000p-4f, -0x1.9409c00000000p-3f},
    {0x1.8342980000000p-1f, -0x1.36f7fe0000000p-2f, 0x1.0000000000000p+0f, -0x1.eeacfe0000000p-4f, -0x1.9409c00000000p-3f},
    {-0x1.8b91a80000000p-6f, -0x1.65bdc80000000p-3f, -0x1.0000000000000p+0f, 0x1.0d58280000000p+0f, -0x1.61dd980000000p-8f},
    {-0x1.8b91a80000000p-6f, -0x1.65bdc60000000p-3f, -0x1.0000000000000p+0f, 0x1.0d58280000000p+0f, -0x1.61dd980000000p-8f},
    {-0x1.4918c00000000p+0f, -0x1.ccc3500000000p-1f, 0.0f, 0x1.1f54300000000p+1f, -0x1.a9d79e0000000p-1f},
    {-0x1.4918be0000000p+0f, -0x1.ccc3500000000p-1f, 0.0f, 0x1.1f54300000000p+1f, -0x1.a9d79e0000000p-1f},
    {-0x1.967ff20000000p-7f, NAN, -0x1.8000000000000p+1f, -0x1.0e13d60000000p+1f, 0x1.0985ae0000000p-2f},
    {0x1.6b9bf60000000p-5f, -0x1.f7679a0000000p-3f, 0.0f, 0x1.54484a0000000p-120f, -0x1.83745e0000000p+0f},
    {-0x1.554f240000000p-3f, -0x1.f183ce0000000p-1f, -0x1.8000000000000p+1f, -0x1.54484a0000000p-120f, -0x1.f6fa420000000p-5f},
    {0x1.a049040000000p-2f, -0x1.fa84de0000000p-1f, -0x1.0000000000000p+0f, 0.0f, -0x1.c5f5ec0000000p-1f},
    {NAN, NAN, 0x1.0000000000000p+0f, 0x1.5be8fa0000000p-2f, 0x1.03387a0000000p+1f},
    {-0x1.648dd20000000p+0f, 0x1.c69b240000000p-1f, 0x1.54484a0000000p-120f, -0x1.cbb9e80000000p-7f, -0x1.732a460000000p+0f},
    {-0.0f, 0x1.7c845a0000000p-1f, -0.0f, 0x1.4bffaa0000000p-4f, -0x1.29b1a20000000p-2f},
    {NAN, NAN, NAN, NAN, NAN},
    {0.0f, 0.0f, 0.0f, 0.0f, 0.0f},
    {0x1.54484a0000000p-120f, 0x1.54484a0000000p-120f, 0x1.54484a0000000p-120f, 0x1.54484a0000000p-120f, 0x1.54484a0000000p-120f},
};
static const double lgb_zero_want[] = {
    0x1.0d0e8d0348ff0p-1, /* 0.5255016390333349 */
    -0x1.18338424bbb0cp-1, /* -0.5472680373039522 */
    0x1.a3efd2ae1978ep-4, /* 0.10252363488106495 */
    0x1.952c243ad1afbp-2, /* 0.39567619904521195 */
    -0x1.776529d8dd0d9p-3, /* -0.18329842274727673 */
    -0x1.776529d8dd0d9p-3, /* -0.18329842274727673 */
    0x1.07f8b3f35211dp-1, /* 0.5155693277857015 */
    0x1.07f8b3f35211dp-1, /* 0.5155693277857015 */
    0x1.a3efd2ae1978ep-4, /* 0.10252363488106495 */
    0x1.2a62a66b61df4p-2, /* 0.2913919451752627 */
    -0x1.336798ca9ae5dp-1, /* -0.600399756176056 */
    -0x1.336798ca9ae5dp-1, /* -0.600399756176056 */
    0x1.cbfa48e3f180bp-2, /* 0.4491969479680626 */
    0x1.13ffa543f8dd2p-2, /* 0.2695298979508297 */
    0x1.cbfa48e3f180bp-2, /* 0.4491969479680626 */
    0x1.13ffa543f8dd2p-2, /* 0.2695298979508297 */
    -0x1.16cc38bbe04c5p+0, /* -1.0890536745721857 */
    -0x1.792047df3571bp-1, /* -0.7365744075748099 */
    -0x1.792047df3571bp-1, /* -0.7365744075748099 */
    -0x1.16cc38bbe04c5p+0, /* -1.0890536745721857 */
    -0x1.16cc38bbe04c5p+0, /* -1.0890536745721857 */
    -0x1.16cc38bbe04c5p+0, /* -1.0890536745721857 */
};
static const float lgb_rank_rows[][5] = {
    {0x1.427a320000000p-10f, 0x1.31ea5a0000000p-2f, -0x1.0000000000000p+0f, -0x1.c7fba80000000p-1f, -0x1.d195380000000p-2f},
    {-0x1.fbb9180000000p-1f, 0x1.ecb2460000000p-5f, 0x1.8000000000000p+1f, -0x1.f804fc0000000p-2f, -0x1.3daee20000000p-1f},
    {0x1.f599280000000p-2f, NAN, 0.0f, -0x1.dc664e0000000p-1f, -0x1.df430a0000000p-6f},
    {0x1.63fec80000000p-1f, -0x1.581e720000000p+0f, -0x1.0000000000000p+0f, 0.0f, -0x1.4a1f260000000p+0f},
    {-0x1.3fe8640000000p-3f, NAN, -0x1.0000000000000p+0f, -0x1.8e7cbc0000000p-4f, 0x1.41cbbc0000000p+0f},
    {-0x1.3fe8620000000p-3f, NAN, -0x1.0000000000000p+0f, -0x1.8e7cbc0000000p-4f, 0x1.41cbbc0000000p+0f},
    {0x1.2f40280000000p-1f, -0x1.36f7fe0000000p-2f, 0x1.0000000000000p+0f, -0x1.eeacfe0000000p-4f, -0x1.9409c00000000p-3f},
    {0x1.2f402a0000000p-1f, -0x1.36f7fe0000000p-2f, 0x1.0000000000000p+0f, -0x1.eeacfe0000000p-4f, -0x1.9409c00000000p-3f},
    {-0x1.8b91a80000000p-6f, 0x1.ecf5c40000000p-4f, -0x1.0000000000000p+0f, 0x1.0d58280000000p+0f, -0x1.61dd980000000p-8f},
    {-0x1.8b91a80000000p-6f, 0x1.ecf5c60000000p-4f, -0x1.0000000000000p+0f, 0x1.0d58280000000p+0f, -0x1.61dd980000000p-8f},
    {-0x1.37c8ca0000000p-2f, 0x1.fcc8700000000p-1f, 0.0f, 0x1.1f54300000000p+1f, -0x1.a9d79e0000000p-1f},
    {-0x1.37c8ca0000000p-2f, 0x1.fcc8720000000p-1f, 0.0f, 0x1.1f54300000000p+1f, -0x1.a9d79e0000000p-1f},
    {-0x1.967ff20000000p-7f, NAN, -0x1.8000000000000p+1f, -0x1.0e13d60000000p+1f, 0x1.0985ae0000000p-2f},
    {0x1.6b9bf60000000p-5f, -0x1.f7679a0000000p-3f, 0.0f, 0x1.54484a0000000p-120f, -0x1.83745e0000000p+0f},
    {-0x1.554f240000000p-3f, -0x1.f183ce0000000p-1f, -0x1.8000000000000p+1f, -0x1.54484a0000000p-120f, -0x1.f6fa420000000p-5f},
    {0x1.a049040000000p-2f, -0x1.fa84de0000000p-1f, -0x1.0000000000000p+0f, 0.0f, -0x1.c5f5ec0000000p-1f},
    {NAN, NAN, 0x1.0000000000000p+0f, 0x1.5be8fa0000000p-2f, 0x1.03387a0000000p+1f},
    {-0x1.648dd20000000p+0f, 0x1.c69b240000000p-1f, 0x1.54484a0000000p-120f, -0x1.cbb9e80000000p-7f, -0x1.732a460000000p+0f},
    {-0.0f, 0x1.7c845a0000000p-1f, -0.0f, 0x1.4bffaa0000000p-4f, -0x1.29b1a20000000p-2f},
    {NAN, NAN, NAN, NAN, NAN},
    {0.0f, 0.0f, 0.0f, 0.0f, 0.0f},
    {0x1.54484a0000000p-120f, 0x1.54484a0000000p-120f, 0x1.54484a0000000p-120f, 0x1.54484a0000000p-120f, 0x1.54484a0000000p-120f},
};
static const double lgb_rank_want[] = {
    0x1.3d344ae660c74p-3, /* 0.15488489642675385 */
    -0x1.1504550e3249bp+0, /* -1.0820973548564214 */
    -0x1.48904f1d47e7bp-1, /* -0.6417259906047116 */
    0x1.c54b8c51dea86p-3, /* 0.22133550286146803 */
    -0x1.ac0acf890f4b2p-2, /* -0.41800998949095025 */
    -0x1.053b798ff65c6p-2, /* -0.2551096910588878 */
    -0x1.668c7f9e56083p-1, /* -0.7002906685620619 */
    -0x1.f0b3345c73aaep-3, /* -0.24252930552616675 */
    0x1.a2a472753c034p-2, /* 0.40883044090788023 */
    0x1.a2a472753c034p-2, /* 0.40883044090788023 */
    -0x1.c00ecf67cb33ap-2, /* -0.43755649634367766 */
    -0x1.b9c7a2b8033c0p-2, /* -0.4314256119549178 */
    0x1.e09a3b3b7d300p-9, /* 0.0036667058282041642 */
    -0x1.32618f23d2d97p-1, /* -0.5984005671720521 */
    -0x1.7926dea5ecb08p-4, /* -0.09207808467798995 */
    0x1.2216793e770aap-4, /* 0.07082221375407252 */
    -0x1.701d6cf38fc30p-1, /* -0.7189744994465226 */
    -0x1.ec4ccc4ca7a9bp-1, /* -0.9615234225819508 */
    -0x1.0aa44a2207724p-2, /* -0.2603923400182444 */
    -0x1.48904f1d47e7bp-1, /* -0.6417259906047116 */
    -0x1.32618f23d2d97p-1, /* -0.5984005671720521 */
    -0x1.32618f23d2d97p-1, /* -0.5984005671720521 */
};

/* XGBoost 3.2.0 xgb_small_logistic.json (binary:logistic) and xgb_small_dart.json (dart): 1e-6 relative. */
static const float xgb_logistic_rows[][5] = {
    {0x1.427a320000000p-10f, 0x1.31ea5a0000000p-2f, -0x1.0000000000000p+0f, -0x1.c7fba80000000p-1f, -0x1.d195380000000p-2f},
    {-0x1.fbb9180000000p-1f, 0x1.ecb2460000000p-5f, 0x1.8000000000000p+1f, -0x1.f804fc0000000p-2f, -0x1.3daee20000000p-1f},
    {0x1.f599280000000p-2f, NAN, 0.0f, -0x1.dc664e0000000p-1f, -0x1.df430a0000000p-6f},
    {0x1.63fec80000000p-1f, -0x1.581e720000000p+0f, -0x1.0000000000000p+0f, 0.0f, -0x1.4a1f260000000p+0f},
    {0x1.5cd8d40000000p-4f, NAN, -0x1.0000000000000p+0f, -0x1.8e7cbc0000000p-4f, 0x1.41cbbc0000000p+0f},
    {0x1.5cd8d60000000p-4f, NAN, -0x1.0000000000000p+0f, -0x1.8e7cbc0000000p-4f, 0x1.41cbbc0000000p+0f},
    {-0x1.b64c2c0000000p-2f, -0x1.36f7fe0000000p-2f, -0x1.0000000000000p+0f, -0x1.eeacfe0000000p-4f, -0x1.9409c00000000p-3f},
    {-0x1.b64c2c0000000p-2f, -0x1.36f7fe0000000p-2f, -0x1.fffffe0000000p-1f, -0x1.eeacfe0000000p-4f, -0x1.9409c00000000p-3f},
    {-0x1.8b91a80000000p-6f, 0x1.56360a0000000p-1f, 0x1.0000000000000p+0f, 0x1.0d58280000000p+0f, -0x1.61dd980000000p-8f},
    {-0x1.8b91a80000000p-6f, 0x1.56360a0000000p-1f, 0x1.0000020000000p+0f, 0x1.0d58280000000p+0f, -0x1.61dd980000000p-8f},
    {-0x1.6b0cb80000000p+0f, -0x1.ccc3500000000p-1f, 0.0f, 0x1.1f54300000000p+1f, -0x1.a9d79e0000000p-1f},
    {-0x1.6b0cb60000000p+0f, -0x1.ccc3500000000p-1f, 0.0f, 0x1.1f54300000000p+1f, -0x1.a9d79e0000000p-1f},
    {-0x1.967ff20000000p-7f, NAN, -0x1.8000000000000p+1f, -0x1.0e13d60000000p+1f, 0x1.0985ae0000000p-2f},
    {0x1.6b9bf60000000p-5f, -0x1.f7679a0000000p-3f, 0.0f, 0x1.54484a0000000p-120f, -0x1.83745e0000000p+0f},
    {-0x1.554f240000000p-3f, -0x1.f183ce0000000p-1f, -0x1.8000000000000p+1f, -0x1.54484a0000000p-120f, -0x1.f6fa420000000p-5f},
    {0x1.a049040000000p-2f, -0x1.fa84de0000000p-1f, -0x1.0000000000000p+0f, 0.0f, -0x1.c5f5ec0000000p-1f},
    {NAN, NAN, 0x1.0000000000000p+0f, 0x1.5be8fa0000000p-2f, 0x1.03387a0000000p+1f},
    {-0x1.648dd20000000p+0f, 0x1.c69b240000000p-1f, 0x1.54484a0000000p-120f, -0x1.cbb9e80000000p-7f, -0x1.732a460000000p+0f},
    {-0.0f, 0x1.7c845a0000000p-1f, -0.0f, 0x1.4bffaa0000000p-4f, -0x1.29b1a20000000p-2f},
    {NAN, NAN, NAN, NAN, NAN},
    {0.0f, 0.0f, 0.0f, 0.0f, 0.0f},
    {0x1.54484a0000000p-120f, 0x1.54484a0000000p-120f, 0x1.54484a0000000p-120f, 0x1.54484a0000000p-120f, 0x1.54484a0000000p-120f},
};
static const double xgb_logistic_want[] = {
    0x1.d383940000000p-1, /* 0.9131132364273071 */
    -0x1.8674da0000000p+0, /* -1.525220513343811 */
    0x1.dced680000000p-2, /* 0.4657493829727173 */
    0x1.47a9b40000000p+0, /* 1.279933214187622 */
    0x1.dced680000000p-2, /* 0.4657493829727173 */
    0x1.dced680000000p-2, /* 0.4657493829727173 */
    -0x1.3efd080000000p-3, /* -0.15575605630874634 */
    -0x1.3efd080000000p-3, /* -0.15575605630874634 */
    -0x1.9e69ea0000000p-3, /* -0.202350452542305 */
    -0x1.9e69ea0000000p-3, /* -0.202350452542305 */
    -0x1.61562a0000000p+0, /* -1.3802210092544556 */
    -0x1.61562a0000000p+0, /* -1.3802210092544556 */
    -0x1.4c7b560000000p-3, /* -0.16234461963176727 */
    0x1.d383940000000p-1, /* 0.9131132364273071 */
    -0x1.4c7b560000000p-3, /* -0.16234461963176727 */
    0x1.dced680000000p-2, /* 0.4657493829727173 */
    0x1.7435c20000000p-1, /* 0.7269726395606995 */
    -0x1.fd5ab40000000p-1, /* -0.9948326349258423 */
    0x1.d383940000000p-1, /* 0.9131132364273071 */
    0x1.7435c20000000p-1, /* 0.7269726395606995 */
    0x1.d383940000000p-1, /* 0.9131132364273071 */
    0x1.d383940000000p-1, /* 0.9131132364273071 */
};
static const float xgb_dart_rows[][5] = {
    {0x1.427a320000000p-10f, 0x1.31ea5a0000000p-2f, -0x1.0000000000000p+0f, -0x1.c7fba80000000p-1f, -0x1.d195380000000p-2f},
    {-0x1.fbb9180000000p-1f, 0x1.ecb2460000000p-5f, 0x1.8000000000000p+1f, -0x1.f804fc0000000p-2f, -0x1.3daee20000000p-1f},
    {0x1.f599280000000p-2f, NAN, 0.0f, -0x1.dc664e0000000p-1f, -0x1.df430a0000000p-6f},
    {0x1.63fec80000000p-1f, -0x1.581e720000000p+0f, -0x1.0000000000000p+0f, 0.0f, -0x1.4a1f260000000p+0f},
    {-0x1.d3be880000000p-2f, NAN, -0x1.0000000000000p+0f, -0x1.8e7cbc0000000p-4f, 0x1.41cbbc0000000p+0f},
    {-0x1.d3be860000000p-2f, NAN, -0x1.0000000000000p+0f, -0x1.8e7cbc0000000p-4f, 0x1.41cbbc0000000p+0f},
    {-0x1.4813180000000p+0f, -0x1.36f7fe0000000p-2f, 0x1.0000000000000p+0f, -0x1.eeacfe0000000p-4f, -0x1.9409c00000000p-3f},
    {-0x1.4813160000000p+0f, -0x1.36f7fe0000000p-2f, 0x1.0000000000000p+0f, -0x1.eeacfe0000000p-4f, -0x1.9409c00000000p-3f},
    {0x1.0ed4160000000p-1f, 0x1.56360a0000000p-1f, -0x1.0000000000000p+0f, 0x1.0d58280000000p+0f, -0x1.61dd980000000p-8f},
    {0x1.0ed4180000000p-1f, 0x1.56360a0000000p-1f, -0x1.0000000000000p+0f, 0x1.0d58280000000p+0f, -0x1.61dd980000000p-8f},
    {-0x1.37c8ca0000000p-2f, -0x1.e938280000000p-2f, 0.0f, 0x1.1f54300000000p+1f, -0x1.a9d79e0000000p-1f},
    {-0x1.37c8ca0000000p-2f, -0x1.e938260000000p-2f, 0.0f, 0x1.1f54300000000p+1f, -0x1.a9d79e0000000p-1f},
    {-0x1.967ff20000000p-7f, NAN, -0x1.8000000000000p+1f, -0x1.0e13d60000000p+1f, 0x1.0985ae0000000p-2f},
    {0x1.6b9bf60000000p-5f, -0x1.f7679a0000000p-3f, 0.0f, 0x1.54484a0000000p-120f, -0x1.83745e0000000p+0f},
    {-0x1.554f240000000p-3f, -0x1.f183ce0000000p-1f, -0x1.8000000000000p+1f, -0x1.54484a0000000p-120f, -0x1.f6fa420000000p-5f},
    {0x1.a049040000000p-2f, -0x1.fa84de0000000p-1f, -0x1.0000000000000p+0f, 0.0f, -0x1.c5f5ec0000000p-1f},
    {NAN, NAN, 0x1.0000000000000p+0f, 0x1.5be8fa0000000p-2f, 0x1.03387a0000000p+1f},
    {-0x1.648dd20000000p+0f, 0x1.c69b240000000p-1f, 0x1.54484a0000000p-120f, -0x1.cbb9e80000000p-7f, -0x1.732a460000000p+0f},
    {-0.0f, 0x1.7c845a0000000p-1f, -0.0f, 0x1.4bffaa0000000p-4f, -0x1.29b1a20000000p-2f},
    {NAN, NAN, NAN, NAN, NAN},
    {0.0f, 0.0f, 0.0f, 0.0f, 0.0f},
    {0x1.54484a0000000p-120f, 0x1.54484a0000000p-120f, 0x1.54484a0000000p-120f, 0x1.54484a0000000p-120f, 0x1.54484a0000000p-120f},
};
static const double xgb_dart_want[] = {
    0x1.2dfd3a0000000p-1, /* 0.5898225903511047 */
    -0x1.6b796c0000000p-1, /* -0.7099107503890991 */
    0x1.2caf860000000p-3, /* 0.14681915938854218 */
    0x1.df1d640000000p-1, /* 0.935771107673645 */
    -0x1.65d8a60000000p-2, /* -0.3494592607021332 */
    -0x1.65d8a60000000p-2, /* -0.3494592607021332 */
    -0x1.6b796c0000000p-1, /* -0.7099107503890991 */
    -0x1.6b796c0000000p-1, /* -0.7099107503890991 */
    0x1.df1d640000000p-1, /* 0.935771107673645 */
    0x1.df1d640000000p-1, /* 0.935771107673645 */
    -0x1.3b32ec0000000p-3, /* -0.1539057195186615 */
    -0x1.3b32ec0000000p-3, /* -0.1539057195186615 */
    0x1.2caf860000000p-3, /* 0.14681915938854218 */
    0x1.2caf860000000p-3, /* 0.14681915938854218 */
    0x1.2caf860000000p-3, /* 0.14681915938854218 */
    0x1.2caf860000000p-3, /* 0.14681915938854218 */
    0x1.13c4000000000p-1, /* 0.538604736328125 */
    -0x1.62af8a0000000p-1, /* -0.6927455067634583 */
    0x1.2dfd3a0000000p-1, /* 0.5898225903511047 */
    0x1.13c4000000000p-1, /* 0.538604736328125 */
    0x1.2caf860000000p-3, /* 0.14681915938854218 */
    0x1.2caf860000000p-3, /* 0.14681915938854218 */
};

/* XGBoost 1.7.6 xgb_small_v1_sqerr.json (reg:squarederror, base_score "5E-1" layout). */
static const float xgb_v1_rows[][5] = {
    {0x1.427a320000000p-10f, 0x1.31ea5a0000000p-2f, -0x1.0000000000000p+0f, -0x1.c7fba80000000p-1f, -0x1.d195380000000p-2f},
    {-0x1.fbb9180000000p-1f, 0x1.ecb2460000000p-5f, 0x1.8000000000000p+1f, -0x1.f804fc0000000p-2f, -0x1.3daee20000000p-1f},
    {0x1.f599280000000p-2f, NAN, 0.0f, -0x1.dc664e0000000p-1f, -0x1.df430a0000000p-6f},
    {0x1.63fec80000000p-1f, -0x1.581e720000000p+0f, -0x1.0000000000000p+0f, 0.0f, -0x1.4a1f260000000p+0f},
    {-0x1.d5a86c0000000p-2f, NAN, -0x1.0000000000000p+0f, -0x1.8e7cbc0000000p-4f, 0x1.41cbbc0000000p+0f},
    {-0x1.d5a86a0000000p-2f, NAN, -0x1.0000000000000p+0f, -0x1.8e7cbc0000000p-4f, 0x1.41cbbc0000000p+0f},
    {-0x1.4918c00000000p+0f, -0x1.36f7fe0000000p-2f, 0x1.0000000000000p+0f, -0x1.eeacfe0000000p-4f, -0x1.9409c00000000p-3f},
    {-0x1.4918be0000000p+0f, -0x1.36f7fe0000000p-2f, 0x1.0000000000000p+0f, -0x1.eeacfe0000000p-4f, -0x1.9409c00000000p-3f},
    {0x1.7da6700000000p-1f, 0x1.56360a0000000p-1f, -0x1.0000000000000p+0f, 0x1.0d58280000000p+0f, -0x1.61dd980000000p-8f},
    {0x1.7da6720000000p-1f, 0x1.56360a0000000p-1f, -0x1.0000000000000p+0f, 0x1.0d58280000000p+0f, -0x1.61dd980000000p-8f},
    {-0x1.37c8ca0000000p-2f, -0x1.0203ae0000000p-1f, 0.0f, 0x1.1f54300000000p+1f, -0x1.a9d79e0000000p-1f},
    {-0x1.37c8ca0000000p-2f, -0x1.0203ac0000000p-1f, 0.0f, 0x1.1f54300000000p+1f, -0x1.a9d79e0000000p-1f},
    {-0x1.967ff20000000p-7f, NAN, -0x1.8000000000000p+1f, -0x1.0e13d60000000p+1f, 0x1.0985ae0000000p-2f},
    {0x1.6b9bf60000000p-5f, -0x1.f7679a0000000p-3f, 0.0f, 0x1.54484a0000000p-120f, -0x1.83745e0000000p+0f},
    {-0x1.554f240000000p-3f, -0x1.f183ce0000000p-1f, -0x1.8000000000000p+1f, -0x1.54484a0000000p-120f, -0x1.f6fa420000000p-5f},
    {0x1.a049040000000p-2f, -0x1.fa84de0000000p-1f, -0x1.0000000000000p+0f, 0.0f, -0x1.c5f5ec0000000p-1f},
    {NAN, NAN, 0x1.0000000000000p+0f, 0x1.5be8fa0000000p-2f, 0x1.03387a0000000p+1f},
    {-0x1.648dd20000000p+0f, 0x1.c69b240000000p-1f, 0x1.54484a0000000p-120f, -0x1.cbb9e80000000p-7f, -0x1.732a460000000p+0f},
    {-0.0f, 0x1.7c845a0000000p-1f, -0.0f, 0x1.4bffaa0000000p-4f, -0x1.29b1a20000000p-2f},
    {NAN, NAN, NAN, NAN, NAN},
    {0.0f, 0.0f, 0.0f, 0.0f, 0.0f},
    {0x1.54484a0000000p-120f, 0x1.54484a0000000p-120f, 0x1.54484a0000000p-120f, 0x1.54484a0000000p-120f, 0x1.54484a0000000p-120f},
};
static const double xgb_v1_want[] = {
    0x1.98315e0000000p-1, /* 0.7972516417503357 */
    -0x1.76b31c0000000p-1, /* -0.7318352460861206 */
    0x1.4b420e0000000p-3, /* 0.16174708306789398 */
    0x1.3364440000000p-1, /* 0.6003743410110474 */
    -0x1.cb6b1a0000000p-2, /* -0.4486507475376129 */
    -0x1.cb6b1a0000000p-2, /* -0.4486507475376129 */
    -0x1.1b9b220000000p-1, /* -0.5539179444313049 */
    -0x1.1b9b220000000p-1, /* -0.5539179444313049 */
    0x1.9a373c0000000p+0, /* 1.602405309677124 */
    0x1.9a373c0000000p+0, /* 1.602405309677124 */
    -0x1.a04f560000000p-3, /* -0.20327632129192352 */
    -0x1.a04f560000000p-3, /* -0.20327632129192352 */
    0x1.7bab120000000p-2, /* 0.37076976895332336 */
    0x1.b1e8960000000p-2, /* 0.4237388074398041 */
    0x1.7bab120000000p-2, /* 0.37076976895332336 */
    0x1.6d02dc0000000p-2, /* 0.3564562201499939 */
    -0x1.407b4e0000000p+0, /* -1.25188148021698 */
    -0x1.7a59fa0000000p-1, /* -0.7389677166938782 */
    0x1.98315e0000000p-1, /* 0.7972516417503357 */
    -0x1.09d1d00000000p+0, /* -1.0383577346801758 */
    0x1.b1e8960000000p-2, /* 0.4237388074398041 */
    0x1.b1e8960000000p-2, /* 0.4237388074398041 */
};

/* ---- helpers ---------------------------------------------------------------------- */

#define NF 5
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static char *read_data_file(const char *name, size_t *size) {
    char path[1024];
    snprintf(path, sizeof path, "%s/models/%s", TS_TEST_DATA_DIR, name);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 4096;
            char *p = realloc(buf, cap);
            if (!p) break;
            buf = p;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    fclose(f);
    *size = n;
    return buf;
}

static ts_model *load_model(const char *name) {
    char path[1024];
    ts_error err;
    ts_model *m = NULL;
    snprintf(path, sizeof path, "%s/models/%s", TS_TEST_DATA_DIR, name);
    ts_status st = ts_model_load_file(path, TS_FORMAT_AUTO, &m, &err);
    CHECK_MSG(st == TS_OK, "%s: %s", name, err.message);
    return st == TS_OK ? m : NULL;
}

/* The reference score: base + sum over trees in order of weight * leaf, in double. */
static double ref_score(const ts_model *m, const float *row) {
    double s = m->base_score;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        const tsm_tree *tr = &m->trees[t];
        s += tr->weight * tr->leaf_values[tsm_tree_exit_leaf(tr, row)];
    }
    return s;
}

/* Load a buffer, expect `want` and a message starting with "NAME:" and containing
 * `needle` (and "NAME:LINE:" when line > 0, with err.line == line). */
static void expect_error(const char *text, size_t size, ts_model_format fmt, ts_status want, unsigned long long line,
                         const char *needle, int src_line) {
    ts_error err;
    ts_model *m = (ts_model *)1;
    memset(&err, 0, sizeof err);
    ts_status st = ts_model_load_buffer(text, size, fmt, "bad.model", &m, &err);
    CHECK_MSG(st == want, "(test line %d) status %s, expected %s: %s", src_line, ts_status_name(st),
              ts_status_name(want), err.message);
    CHECK_MSG(m == NULL, "(test line %d) model not NULL on error", src_line);
    CHECK_MSG(err.status == st, "(test line %d) err.status differs", src_line);
    CHECK_MSG(strncmp(err.message, "bad.model", 9) == 0, "(test line %d) message does not name the file: %s",
              src_line, err.message);
    if (line) {
        char prefix[64];
        snprintf(prefix, sizeof prefix, "bad.model:%llu:", line);
        CHECK_MSG(strncmp(err.message, prefix, strlen(prefix)) == 0 && err.line == line,
                  "(test line %d) expected line %llu (err.line %llu): %s", src_line, line, err.line, err.message);
    }
    if (needle)
        CHECK_MSG(strstr(err.message, needle) != NULL, "(test line %d) message lacks '%s': %s", src_line, needle,
                  err.message);
    if (st == TS_OK) ts_model_free(m);
}
#define EXPECT_ERROR(text, fmt, want, line, needle) expect_error(text, strlen(text), fmt, want, line, needle, __LINE__)

/* Copy of `text` with the first occurrence of `from` replaced by `to` (NULL if absent). */
static char *replace(const char *text, const char *from, const char *to) {
    const char *hit = strstr(text, from);
    if (!hit) {
        fprintf(stderr, "replace: '%s' not found\n", from);
        return NULL;
    }
    size_t a = (size_t)(hit - text), b = strlen(from), c = strlen(to), n = strlen(text);
    char *out = malloc(n - b + c + 1);
    memcpy(out, text, a);
    memcpy(out + a, to, c);
    memcpy(out + a + c, hit + b, n - a - b + 1);
    return out;
}

/* 1-based line of the first occurrence of `needle`. */
static unsigned long long line_of(const char *text, const char *needle) {
    const char *hit = strstr(text, needle);
    unsigned long long line = 1;
    for (const char *p = text; hit && p < hit; p++)
        if (*p == '\n') line++;
    return line;
}

static void expect_variant(const char *base, const char *from, const char *to, ts_model_format fmt, ts_status want,
                           const char *line_needle, const char *needle, int src_line) {
    char *text = replace(base, from, to);
    CHECK_MSG(text != NULL, "(test line %d) bad replacement", src_line);
    if (!text) return;
    unsigned long long line = line_needle ? line_of(text, line_needle) : 0;
    expect_error(text, strlen(text), fmt, want, line, needle, src_line);
    free(text);
}
#define EXPECT_VARIANT(base, from, to, fmt, want, line_needle, needle)                                    \
    expect_variant(base, from, to, fmt, want, line_needle, needle, __LINE__)

/* ---- small hand-written models ---------------------------------------------------- */

static const char LGB_TEMPLATE[] =
    "tree\n"
    "version=v4\n"
    "num_class=1\n"
    "num_tree_per_iteration=1\n"
    "label_index=0\n"
    "max_feature_idx=3\n"
    "objective=regression\n"
    "feature_names=a b c d\n"
    "feature_infos=none none none none\n"
    "tree_sizes=400 300\n"
    "\n"
    "Tree=0\n"
    "num_leaves=3\n"
    "num_cat=0\n"
    "split_feature=0 2\n"
    "split_gain=1 1\n"
    "threshold=0.5 1.0000000180025095e-35\n"
    "decision_type=2 6\n"
    "left_child=1 -1\n"
    "right_child=-3 -2\n"
    "leaf_value=0.25 0.5 -1\n"
    "leaf_weight=1 1 1\n"
    "leaf_count=1 1 1\n"
    "internal_value=0 0\n"
    "internal_weight=0 0\n"
    "internal_count=2 1\n"
    "is_linear=0\n"
    "shrinkage=1\n"
    "\n"
    "\n"
    "Tree=1\n"
    "num_leaves=1\n"
    "num_cat=0\n"
    "split_feature=\n"
    "split_gain=\n"
    "threshold=\n"
    "decision_type=\n"
    "left_child=\n"
    "right_child=\n"
    "leaf_value=0.125\n"
    "leaf_weight=\n"
    "leaf_count=3\n"
    "internal_value=\n"
    "internal_weight=\n"
    "internal_count=\n"
    "is_linear=0\n"
    "shrinkage=1\n"
    "\n"
    "\n"
    "end of trees\n"
    "\n"
    "feature_importances:\n"
    "a=1\n"
    "\n"
    "parameters:\n"
    "[boosting: gbdt]\n"
    "end of parameters\n"
    "\n"
    "pandas_categorical:null\n";

static const char XGB_TEMPLATE[] =
    "{\"learner\":{\"attributes\":{},\"feature_names\":[],\"feature_types\":[],\n"
    "\"gradient_booster\":{\"model\":{\"gbtree_model_param\":{\"num_parallel_tree\":\"1\",\"num_trees\":\"1\"},\n"
    "\"iteration_indptr\":[0,1],\"tree_info\":[0],\n"
    "\"trees\":[{\"base_weights\":[0,0,0],\"categories\":[],\"categories_nodes\":[],\n"
    "\"default_left\":[1,0,0],\"id\":0,\n"
    "\"left_children\":[1,-1,-1],\n"
    "\"loss_changes\":[0,0,0],\"parents\":[2147483647,0,0],\n"
    "\"right_children\":[2,-1,-1],\n"
    "\"split_conditions\":[5E-1,-1E0,2E0],\n"
    "\"split_indices\":[1,0,0],\n"
    "\"split_type\":[0,0,0],\"sum_hessian\":[1,1,1],\n"
    "\"tree_param\":{\"num_deleted\":\"0\",\"num_feature\":\"3\",\"num_nodes\":\"3\",\"size_leaf_vector\":\"1\"}}]},\n"
    "\"name\":\"gbtree\"},\n"
    "\"learner_model_param\":{\"base_score\":\"[5E-1]\",\"boost_from_average\":\"1\",\"num_class\":\"0\",\n"
    "\"num_feature\":\"3\",\"num_target\":\"1\"},\n"
    "\"objective\":{\"name\":\"reg:squarederror\",\"reg_loss_param\":{\"scale_pos_weight\":\"1\"}}},\n"
    "\"version\":[3,2,0]}\n";

static const char QR_TEMPLATE[] =
    "## LambdaMART\n"
    "## No. of trees = 2\n"
    "<?xml version=\"1.0\"?>\n"
    "<ranker><info><type>MART</type><!-- <tree> in a comment --></info>\n"
    "<ensemble>\n"
    "<tree id=\"1\" weight=\"0.5\">\n"
    "  <split>\n"
    "    <feature> 2 </feature>\n"
    "    <threshold>0.25</threshold>\n"
    "    <split pos=\"left\"><output>1.0</output></split>\n"
    "    <split pos=\"right\"><output>-1.0</output></split>\n"
    "  </split>\n"
    "</tree>\n"
    "<tree id='2' weight='2'><output>0.125</output></tree>\n"
    "</ensemble>\n"
    "</ranker>\n";

/* ---- tests ------------------------------------------------------------------------ */

static void test_detect(void) {
    CHECK(tsio_detect_model_format("tree\nversion=v4\n", 17) == TS_FORMAT_LIGHTGBM);
    CHECK(tsio_detect_model_format("tree\r\n", 6) == TS_FORMAT_LIGHTGBM);
    CHECK(tsio_detect_model_format("tree \t\r\n", 8) == TS_FORMAT_LIGHTGBM);
    CHECK(tsio_detect_model_format("tree x\n", 7) == TS_FORMAT_AUTO);
    CHECK(tsio_detect_model_format("\xEF\xBB\xBF  \n tree", 11) == TS_FORMAT_LIGHTGBM);
    CHECK(tsio_detect_model_format("version=v3\n", 11) == TS_FORMAT_LIGHTGBM);
    CHECK(tsio_detect_model_format("  {\"learner\"", 12) == TS_FORMAT_XGBOOST_JSON);
    CHECK(tsio_detect_model_format("<ranker>", 8) == TS_FORMAT_QUICKRANK_XML);
    CHECK(tsio_detect_model_format("## LambdaMART\n<ensemble>", 24) == TS_FORMAT_RANKLIB);
    CHECK(tsio_detect_model_format("## Random Forests\r\n## Learning rate = 0.1\n\n<ensemble>", 53) ==
          TS_FORMAT_RANKLIB);
    CHECK(tsio_detect_model_format("## LambdaMART\n## Learning rate = 0.100000\n<ensemble>", 52) ==
          TS_FORMAT_QUICKRANK_XML); /* QuickRank's "%f" imitation of RankLib's header */
    CHECK(tsio_detect_model_format("## LambdaMART\n<ranker>", 22) == TS_FORMAT_QUICKRANK_XML);
    CHECK(tsio_detect_model_format("{\"name\": \"tree\", \"tree_info\": []}", 33) == TS_FORMAT_LIGHTGBM_JSON);
    CHECK(tsio_detect_model_format("{\"average_output\": false, \"tree_info\": []}", 42) == TS_FORMAT_LIGHTGBM_JSON);
    CHECK(tsio_detect_model_format("trees\n", 6) == TS_FORMAT_AUTO);
    CHECK(tsio_detect_model_format("hello", 5) == TS_FORMAT_AUTO);
    CHECK(tsio_detect_model_format("", 0) == TS_FORMAT_AUTO);
    CHECK(tsio_detect_model_format("   \n", 4) == TS_FORMAT_AUTO);
    CHECK(tsio_detect_model_format("tre", 3) == TS_FORMAT_AUTO);
    CHECK(tsio_detect_model_format("tree", 4) == TS_FORMAT_LIGHTGBM);
}

typedef struct file_expect {
    const char *name;
    ts_model_format format;
    uint32_t n_trees;
    uint64_t n_leaves;
    uint32_t n_features, n_features_declared;
    const char *objective;
} file_expect;

static void test_real_files_info(void) {
    static const file_expect files[] = {
        {"rankeval_LightGBM.model.txt", TS_FORMAT_LIGHTGBM, 2, 6, 136, 136, "lambdarank"},
        {"lgb_small_zero_missing.txt", TS_FORMAT_LIGHTGBM, 4, 24, 5, 5, "regression"},
        {"lgb_small_lambdarank.txt", TS_FORMAT_LIGHTGBM, 4, 24, 5, 5, "lambdarank"},
        {"xgb_small_logistic.json", TS_FORMAT_XGBOOST_JSON, 4, 31, 5, 5, "binary:logistic"},
        {"xgb_small_dart.json", TS_FORMAT_XGBOOST_JSON, 4, 32, 5, 5, "reg:squarederror"},
        {"xgb_small_v1_sqerr.json", TS_FORMAT_XGBOOST_JSON, 4, 32, 5, 5, "reg:squarederror"},
        {"rankeval_quickrank.model.xml", TS_FORMAT_QUICKRANK_XML, 2, 6, 116, 0, ""},
        {"rankeval_quickrank.model.v2.xml", TS_FORMAT_QUICKRANK_XML, 2, 6, 116, 0, ""},
        {"msn_lambdamart_10trees_quickrank.xml", TS_FORMAT_QUICKRANK_XML, 10, 80, 137, 0, ""},
    };
    for (size_t i = 0; i < COUNT(files); i++) {
        const file_expect *e = &files[i];
        ts_model *m = load_model(e->name);
        if (!m) continue;
        ts_model_info info;
        CHECK_STATUS(ts_model_get_info(m, &info, NULL), TS_OK);
        CHECK_MSG(info.format == e->format, "%s: format %d", e->name, (int)info.format);
        CHECK_MSG(info.n_trees == e->n_trees, "%s: %u trees", e->name, info.n_trees);
        CHECK_MSG(info.n_leaves == e->n_leaves, "%s: %llu leaves", e->name, (unsigned long long)info.n_leaves);
        CHECK_MSG(info.n_internal_nodes + info.n_trees == info.n_leaves, "%s: nodes/leaves", e->name);
        CHECK_MSG(info.n_features == e->n_features, "%s: %u features", e->name, info.n_features);
        CHECK_MSG(info.n_features_declared == e->n_features_declared, "%s: %u declared", e->name,
                  info.n_features_declared);
        CHECK_MSG(strcmp(info.objective, e->objective) == 0, "%s: objective '%s'", e->name, info.objective);
        CHECK_MSG(info.average_output == 0, "%s: average_output", e->name);
        ts_model_free(m);
    }
}

static void check_table(const char *name, const float (*rows)[NF], const double *want, size_t n, int exact) {
    ts_model *m = load_model(name);
    if (!m) return;
    CHECK(m->n_features <= NF);
    for (size_t i = 0; i < n; i++) {
        double got = ref_score(m, rows[i]);
        if (exact)
            CHECK_MSG(memcmp(&got, &want[i], sizeof got) == 0, "%s row %zu: %.17g, LightGBM %.17g", name, i, got,
                      want[i]);
        else
            CHECK_MSG(fabs(got - want[i]) <= 1e-6 * fmax(1.0, fabs(want[i])), "%s row %zu: %.17g, XGBoost %.17g",
                      name, i, got, want[i]);
    }
    ts_model_free(m);
}

static void test_scores_lightgbm(void) {
    check_table("lgb_small_zero_missing.txt", lgb_zero_rows, lgb_zero_want, COUNT(lgb_zero_want), 1);
    check_table("lgb_small_lambdarank.txt", lgb_rank_rows, lgb_rank_want, COUNT(lgb_rank_want), 1);
    CHECK(COUNT(lgb_zero_rows) == COUNT(lgb_zero_want) && COUNT(lgb_rank_rows) == COUNT(lgb_rank_want));

    /* The hand-written template: tree 0 is x0 <= 0.5 ? (x2 Zero-missing, default left,
     * t = 1e-35f: x2 <= 1e-35 or zero-ish -> 0.25 : 0.5) : -1; tree 1 is 0.125. */
    ts_model *m = NULL;
    ts_error err;
    CHECK_STATUS(ts_model_load_buffer(LGB_TEMPLATE, strlen(LGB_TEMPLATE), TS_FORMAT_AUTO, "t.txt", &m, &err), TS_OK);
    if (!m) return;
    const float r[][4] = {{0.5f, 0, 0, 0},      {nextafterf(0.5f, 1), 0, 0, 0}, {NAN, 0, 1e-36f, 0},
                          {0, 0, 1e-35f, 0},     {0, 0, nextafterf(1e-35f, 1), 0}, {0, 0, -1e-35f, 0},
                          {0, 0, NAN, 0},        {0, 0, -1.0f, 0},                {-1e-36f, 0, 2.0f, 0}};
    const double want[] = {0.25 + 0.125, -1 + 0.125, 0.25 + 0.125, 0.25 + 0.125, 0.5 + 0.125,
                           0.25 + 0.125, 0.25 + 0.125, 0.25 + 0.125, 0.5 + 0.125};
    for (size_t i = 0; i < COUNT(want); i++) CHECK_SAME_DOUBLE(ref_score(m, r[i]), want[i]);
    ts_model_info info;
    ts_model_get_info(m, &info, NULL);
    CHECK(info.n_trees == 2 && info.n_leaves == 4 && info.depth_max == 2 && info.has_missing_splits == 1);
    CHECK(m->n_features == 4 && m->n_features_declared == 4 && m->base_score == 0.0);
    CHECK(m->trees[1].n_nodes == 0 && m->trees[1].leaf_values[0] == 0.125);
    CHECK(m->trees[0].nodes[1].flags == (TSM_ZERO_IS_MISSING | TSM_MISSING_LEFT));
    CHECK(ts_model_absent_value(m) == 0.0f);
    ts_model_free(m);

    /* average_output (random forest): noted; the raw score stays the sum. */
    char *rf = replace(LGB_TEMPLATE, "objective=regression\n", "objective=regression\naverage_output\n");
    CHECK_STATUS(ts_model_load_buffer(rf, strlen(rf), TS_FORMAT_LIGHTGBM, "rf.txt", &m, &err), TS_OK);
    if (m) CHECK(m->average_output == 1);
    ts_model_free(m);
    free(rf);

    /* A threshold inside the zero range of a Zero-missing node is still one float split. */
    char *zr = replace(LGB_TEMPLATE, "threshold=0.5 1.0000000180025095e-35", "threshold=0.5 5e-36");
    CHECK_STATUS(ts_model_load_buffer(zr, strlen(zr), TS_FORMAT_LIGHTGBM, "zr.txt", &m, &err), TS_OK);
    if (m) {
        const float zrow[][4] = {{0, 0, 1e-35f, 0}, {0, 0, 2e-35f, 0}, {0, 0, -2e-35f, 0}, {0, 0, -1e-35f, 0}};
        const double zwant[] = {0.25 + 0.125, 0.5 + 0.125, 0.25 + 0.125, 0.25 + 0.125};
        for (size_t i = 0; i < COUNT(zwant); i++) CHECK_SAME_DOUBLE(ref_score(m, zrow[i]), zwant[i]);
    }
    ts_model_free(m);
    free(zr);

    /* CRLF line ends and a BOM are accepted. */
    size_t n = strlen(LGB_TEMPLATE), k = 3;
    char *crlf = malloc(2 * n + 4);
    memcpy(crlf, "\xEF\xBB\xBF", 3);
    for (size_t i = 0; i < n; i++) {
        if (LGB_TEMPLATE[i] == '\n') crlf[k++] = '\r';
        crlf[k++] = LGB_TEMPLATE[i];
    }
    CHECK_STATUS(ts_model_load_buffer(crlf, k, TS_FORMAT_AUTO, "crlf.txt", &m, &err), TS_OK);
    if (m) CHECK(m->n_trees == 2 && m->trees[0].leaf_values[2] == -1.0);
    ts_model_free(m);
    free(crlf);

    /* Every line padded with blanks by an editor (before a CR or not): "end of trees  " was
     * "expected 'Tree=' or 'end of trees', found 'end of trees  '". */
    for (int cr = 0; cr < 2; cr++) {
        char *pad = malloc(4 * n + 4);
        k = 0;
        for (size_t i = 0; i < n; i++) {
            if (LGB_TEMPLATE[i] == '\n') {
                memcpy(pad + k, " \t ", 3);
                k += 3;
                if (cr) pad[k++] = '\r';
            }
            pad[k++] = LGB_TEMPLATE[i];
        }
        CHECK_STATUS(ts_model_load_buffer(pad, k, TS_FORMAT_AUTO, "padded.txt", &m, &err), TS_OK);
        if (m) CHECK(m->n_trees == 2 && m->trees[0].leaf_values[2] == -1.0 && strcmp(m->objective, "regression") == 0);
        ts_model_free(m);
        free(pad);
    }
}

static void test_scores_xgboost(void) {
    check_table("xgb_small_logistic.json", xgb_logistic_rows, xgb_logistic_want, COUNT(xgb_logistic_want), 0);
    check_table("xgb_small_dart.json", xgb_dart_rows, xgb_dart_want, COUNT(xgb_dart_want), 0);
    check_table("xgb_small_v1_sqerr.json", xgb_v1_rows, xgb_v1_want, COUNT(xgb_v1_want), 0);

    ts_model *m = load_model("xgb_small_dart.json");
    if (m) {
        CHECK(m->trees[0].weight == (double)7.905139E-1f && m->trees[3].weight == (double)3.030303E-1f);
        CHECK(isnan(ts_model_absent_value(m)));
    }
    ts_model_free(m);

    /* Template: x1 < 0.5 -> -1, NaN -> default left (-1), else 2; base 0.5. */
    ts_error err;
    CHECK_STATUS(ts_model_load_buffer(XGB_TEMPLATE, strlen(XGB_TEMPLATE), TS_FORMAT_AUTO, "t.json", &m, &err), TS_OK);
    if (!m) return;
    const float r[][3] = {{0, 0.5f, 0}, {0, nextafterf(0.5f, 0), 0}, {0, NAN, 0}, {0, INFINITY, 0}, {0, -INFINITY, 0}};
    const double want[] = {2.5, -0.5, -0.5, 2.5, -0.5};
    for (size_t i = 0; i < COUNT(want); i++) CHECK_SAME_DOUBLE(ref_score(m, r[i]), want[i]);
    CHECK(m->n_features_declared == 3 && m->n_features == 3 && strcmp(m->objective, "reg:squarederror") == 0);
    ts_model_free(m);

    /* Older layouts: base_score without brackets, booleans in default_left, no split_type,
     * and the logistic link applied to base_score. */
    char *a = replace(XGB_TEMPLATE, "\"[5E-1]\"", "\"2.5E-1\"");
    char *b = replace(a, "\"default_left\":[1,0,0]", "\"default_left\":[true,false,false]");
    char *c = replace(b, "\"split_type\":[0,0,0],", "");
    char *d = replace(c, "reg:squarederror", "binary:logistic");
    CHECK_STATUS(ts_model_load_buffer(d, strlen(d), TS_FORMAT_XGBOOST_JSON, "old.json", &m, &err), TS_OK);
    if (m) {
        CHECK_SAME_DOUBLE(m->base_score, (double)-logf(1.0f / 0.25f - 1.0f));
        CHECK_SAME_DOUBLE(ref_score(m, r[2]), m->base_score - 1.0);
    }
    ts_model_free(m);
    char *e = replace(d, "binary:logistic", "count:poisson");
    CHECK_STATUS(ts_model_load_buffer(e, strlen(e), TS_FORMAT_XGBOOST_JSON, "old.json", &m, &err), TS_OK);
    if (m) CHECK_SAME_DOUBLE(m->base_score, (double)logf(0.25f));
    ts_model_free(m);
    char *f = replace(d, "binary:logistic", "binary:logitraw");
    CHECK_STATUS(ts_model_load_buffer(f, strlen(f), TS_FORMAT_XGBOOST_JSON, "old.json", &m, &err), TS_OK);
    if (m) CHECK_SAME_DOUBLE(m->base_score, 0.25);
    ts_model_free(m);
    free(a), free(b), free(c), free(d), free(e), free(f);
}

static void test_scores_quickrank(void) {
    ts_model *m = NULL;
    ts_error err;
    CHECK_STATUS(ts_model_load_buffer(QR_TEMPLATE, strlen(QR_TEMPLATE), TS_FORMAT_AUTO, "t.xml", &m, &err), TS_OK);
    if (m) {
        const float r[][3] = {{0, 0, 0.25f}, {0, 0, nextafterf(0.25f, 1)}, {0, 0, NAN}, {0, 0, -INFINITY}};
        const double want[] = {0.5 * 1.0 + 2 * 0.125, 0.5 * -1.0 + 2 * 0.125, 0.5 * -1.0 + 2 * 0.125,
                               0.5 * 1.0 + 2 * 0.125};
        for (size_t i = 0; i < COUNT(want); i++) CHECK_SAME_DOUBLE(ref_score(m, r[i]), want[i]);
        CHECK(m->n_features == 3 && m->n_features_declared == 0 && m->trees[1].n_nodes == 0);
    }
    ts_model_free(m);

    /* rankeval_quickrank.model.xml: tree 1 splits f108 <= 14.895151138305664 then
     * f115 <= -8.0245580673217773; tree 2 splits f8 <= 0.66666698455810547 then
     * f106 <= 17.135160446166992; both weights 0.10000000149011612. */
    m = load_model("rankeval_quickrank.model.xml");
    if (m) {
        float row[116];
        const double w = 0.10000000149011612;
        for (size_t i = 0; i < 116; i++) row[i] = 0;
        row[108] = (float)14.895151138305664; /* on the threshold: left */
        row[115] = 0;                         /* > -8.02: right */
        row[8] = nextafterf((float)0.66666698455810547, 1);
        row[106] = NAN;                       /* NaN goes right */
        CHECK_SAME_DOUBLE(ref_score(m, row), 0.0 + w * 0.66845277963831218 + w * 0.98651670670179537);
        row[108] = nextafterf(row[108], INFINITY);
        row[8] = (float)0.66666698455810547;
        CHECK_SAME_DOUBLE(ref_score(m, row), 0.0 + w * 0.96317280453257792 + w * 0.37133907932286642);
    }
    ts_model_free(m);

    /* A deep chain (20000 nested splits) loads without recursion. */
    const int depth = 20000;
    size_t cap = (size_t)depth * 160 + 256, n = 0;
    char *xml = malloc(cap);
    n += (size_t)snprintf(xml + n, cap - n, "<ensemble><tree id=\"1\">");
    for (int i = 0; i < depth; i++)
        n += (size_t)snprintf(xml + n, cap - n, "<split%s><feature>1</feature><threshold>%d</threshold>"
                                                "<split pos=\"right\"><output>%d</output></split>",
                              i ? " pos=\"left\"" : "", depth - i, i);
    n += (size_t)snprintf(xml + n, cap - n, "<split pos=\"left\"><output>-1</output></split>");
    for (int i = 0; i < depth; i++) n += (size_t)snprintf(xml + n, cap - n, "</split>");
    n += (size_t)snprintf(xml + n, cap - n, "</tree></ensemble>");
    CHECK_STATUS(ts_model_load_buffer(xml, n, TS_FORMAT_AUTO, "deep.xml", &m, &err), TS_OK);
    if (m) {
        CHECK(m->trees[0].depth == (uint32_t)depth && m->trees[0].n_leaves == (uint32_t)depth + 1);
        float row[2] = {0, 0.5f};
        CHECK_SAME_DOUBLE(ref_score(m, row), -1.0);
        row[1] = (float)depth - 0.5f;
        CHECK_SAME_DOUBLE(ref_score(m, row), 1.0);
    }
    ts_model_free(m);
    free(xml);
}

static void test_thresholds(void) {
    const float z = TSM_ZERO_RANGE, below = nextafterf(-TSM_ZERO_RANGE, -INFINITY);
    /* LightGBM: every x in [-1e-35, 1e-35] behaves as 0.0. */
    CHECK(tsm_threshold_lightgbm(1.0000000180025095e-35) == z);
    CHECK(tsm_threshold_lightgbm(-1.0000000180025095e-35) == below);
    CHECK(tsm_threshold_lightgbm(0.0) == z);
    CHECK(tsm_threshold_lightgbm(-0.0) == z);
    CHECK(tsm_threshold_lightgbm(1e-40) == z);
    CHECK(tsm_threshold_lightgbm(-1e-40) == below);
    CHECK(tsm_threshold_lightgbm(-1e-300) == below);
    CHECK(tsm_threshold_lightgbm(-5e-36) == below);
    CHECK(tsm_threshold_lightgbm(2e-35) == tsm_threshold_le_double(2e-35));
    CHECK(tsm_threshold_lightgbm(-2e-35) == tsm_threshold_le_double(-2e-35));
    CHECK(tsm_threshold_lightgbm(0.5) == 0.5f);
    CHECK(tsm_threshold_lightgbm(0.1) == nextafterf(0.1f, 0) || tsm_threshold_lightgbm(0.1) == 0.1f);
    CHECK((double)tsm_threshold_lightgbm(0.1) <= 0.1 && (double)nextafterf(tsm_threshold_lightgbm(0.1), 1) > 0.1);
    CHECK(tsm_threshold_lightgbm(1e300) == FLT_MAX);
    CHECK(tsm_threshold_lightgbm(INFINITY) == INFINITY);
    /* le_double: the largest float not above t. */
    CHECK(tsm_threshold_le_double(1.0) == 1.0f);
    CHECK(tsm_threshold_le_double(nextafter(1.0, 2)) == 1.0f);
    CHECK(tsm_threshold_le_double(nextafter(1.0, 0)) == nextafterf(1.0f, 0));
    CHECK(tsm_threshold_le_double(-1e-50) == -0x1p-149f);
    /* XGBoost x < t  ==  x <= lt_float(t). */
    CHECK(tsm_threshold_lt_float(0.0f) == -0x1p-149f);
    CHECK(tsm_threshold_lt_float(-0.0f) == -0x1p-149f);
    CHECK(tsm_threshold_lt_float(0x1p-149f) == 0.0f);
    CHECK(tsm_threshold_lt_float(-0x1p-149f) == -0x1p-148f);
    CHECK(tsm_threshold_lt_float(FLT_MIN) == nextafterf(FLT_MIN, 0));
    CHECK(tsm_threshold_lt_float(FLT_MAX) == nextafterf(FLT_MAX, 0));
    CHECK(tsm_threshold_lt_float(INFINITY) == FLT_MAX);
    CHECK(tsm_threshold_lt_float(-FLT_MAX) == -INFINITY);
    CHECK(tsm_threshold_lt_float(1.0f) == nextafterf(1.0f, 0));
    /* The predicate really is x < t for floats around the threshold. */
    const float ts[] = {0.0f, -0.0f, 0x1p-149f, 1.0f, -2.5f, FLT_MAX, INFINITY};
    for (size_t i = 0; i < COUNT(ts); i++) {
        float thr = tsm_threshold_lt_float(ts[i]);
        float xs[] = {ts[i], nextafterf(ts[i], -INFINITY), nextafterf(ts[i], INFINITY), -0.0f, 0.0f};
        for (size_t j = 0; j < COUNT(xs); j++) CHECK_MSG((xs[j] <= thr) == (xs[j] < ts[i]), "t=%a x=%a", ts[i], xs[j]);
    }
}

static void test_errors_general(void) {
    ts_error err;
    ts_model *m = (ts_model *)1;
    EXPECT_ERROR("", TS_FORMAT_AUTO, TS_ERR_PARSE, 0, "empty");
    CHECK_STATUS(ts_model_load_buffer("", 0, TS_FORMAT_LIGHTGBM, NULL, &m, &err), TS_ERR_PARSE);
    CHECK(m == NULL && strncmp(err.message, "<buffer>", 8) == 0);
    EXPECT_ERROR(" \n\t\r\n", TS_FORMAT_AUTO, TS_ERR_PARSE, 0, "empty");
    EXPECT_ERROR("\n\nhello world\n", TS_FORMAT_AUTO, TS_ERR_PARSE, 3, "unknown model format");
    /* --model-format lightgbm on another format's file said "truncated?" */
    EXPECT_ERROR("{\"learner\": {}}\n", TS_FORMAT_LIGHTGBM, TS_ERR_PARSE, 1, "not a LightGBM text model");
    EXPECT_ERROR("tree\nversion=v4\nnum_class=1\n", TS_FORMAT_LIGHTGBM, TS_ERR_PARSE, 3, "truncated?");
    const char garbage[] = "\x01\x02\xff\xfe\x00\x00\x7f{<#tree\x00\x01";
    for (int f = 0; f <= 3; f++)
        expect_error(garbage, sizeof garbage - 1, (ts_model_format)f, TS_ERR_PARSE, 0, NULL, __LINE__);
    expect_error("{\"a\":1}\x00 ", 9, TS_FORMAT_AUTO, TS_ERR_PARSE, 0, NULL, __LINE__);
    expect_error("<ensemble>\x00</ensemble>", 22, TS_FORMAT_AUTO, TS_ERR_PARSE, 0, NULL, __LINE__);
    CHECK_STATUS(ts_model_load_buffer("tree", 4, (ts_model_format)TS_FORMAT_COUNT, "x", &m, &err), TS_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ts_model_load_buffer(NULL, 4, TS_FORMAT_AUTO, "x", &m, &err), TS_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ts_model_load_buffer("tree", 4, TS_FORMAT_AUTO, "x", NULL, &err), TS_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ts_model_load_buffer("", 0, TS_FORMAT_AUTO, "x", &m, NULL), TS_ERR_PARSE);

    CHECK_STATUS(ts_model_load_file("/nonexistent/dir/model.txt", TS_FORMAT_AUTO, &m, &err), TS_ERR_IO);
    CHECK(m == NULL && strstr(err.message, "/nonexistent/dir/model.txt") == err.message &&
          strstr(err.message, "No such file") != NULL);
    CHECK_STATUS(ts_model_load_file(TS_TEST_DATA_DIR, TS_FORMAT_AUTO, &m, &err), TS_ERR_IO);
    CHECK(strstr(err.message, TS_TEST_DATA_DIR) == err.message);
    CHECK_STATUS(ts_model_load_file(NULL, TS_FORMAT_AUTO, &m, &err), TS_ERR_INVALID_ARGUMENT);
}

static void test_errors_lightgbm(void) {
    const char *T = LGB_TEMPLATE;
    const ts_model_format F = TS_FORMAT_LIGHTGBM;
    EXPECT_VARIANT(T, "threshold=0.5 ", "threshold=abc ", F, TS_ERR_PARSE, "threshold=", "tree 0: bad threshold 'abc'");
    EXPECT_VARIANT(T, "threshold=0.5 ", "threshold=0.5x ", F, TS_ERR_PARSE, "threshold=", "bad threshold '0.5x'");
    EXPECT_VARIANT(T, "threshold=0.5 ", "threshold=nan ", F, TS_ERR_PARSE, "threshold=", "NaN");
    EXPECT_VARIANT(T, "threshold=0.5 ", "threshold=0x1p3 ", F, TS_ERR_PARSE, "threshold=", "bad threshold");
    EXPECT_VARIANT(T, "leaf_value=0.25 0.5 -1", "leaf_value=0.25 0.5", F, TS_ERR_PARSE, "leaf_value=0.25",
                   "leaf_value has 2 values, expected 3");
    EXPECT_VARIANT(T, "split_feature=0 2", "split_feature=0 2 1", F, TS_ERR_PARSE, "split_feature=",
                   "split_feature has 3 values, expected 2");
    EXPECT_VARIANT(T, "left_child=1 -1", "left_child=1 -1.5", F, TS_ERR_PARSE, "left_child=", "bad left_child");
    EXPECT_VARIANT(T, "num_leaves=3", "num_leaves=0", F, TS_ERR_PARSE, "num_leaves=0", "num_leaves");
    EXPECT_VARIANT(T, "num_leaves=3", "num_leaves=99999999999", F, TS_ERR_LIMIT, "num_leaves=9", "above the limit 16777216");
    /* claims past a limit fail as they are read (TS_ERR_LIMIT, the limit named) */
    EXPECT_VARIANT(T, "split_feature=0 2", "split_feature=0 4000000000", F, TS_ERR_LIMIT, "4000000000",
                   "split_feature 4000000000 is above the limit 16777215");
    EXPECT_VARIANT(T, "max_feature_idx=3", "max_feature_idx=4294967295", F, TS_ERR_LIMIT, "max_feature_idx=",
                   "above the limit 16777215");
    EXPECT_VARIANT(T, "num_tree_per_iteration=1", "num_tree_per_iteration=2147483648", F, TS_ERR_LIMIT,
                   "num_tree_per_iteration=", "above the limit 1073741824");
    EXPECT_VARIANT(T, "num_leaves=3\n", "", F, TS_ERR_PARSE, "Tree=0", "tree 0: no num_leaves");
    EXPECT_VARIANT(T, "right_child=-3 -2\n", "", F, TS_ERR_PARSE, "Tree=0", "no right_child");
    EXPECT_VARIANT(T, "decision_type=2 6", "decision_type=2 7", F, TS_ERR_INVALID_MODEL, "threshold=",
                   "is not a category set index");
    EXPECT_VARIANT(T, "decision_type=2 6", "decision_type=2 14", F, TS_ERR_UNSUPPORTED, "decision_type=2 14",
                   "unknown decision_type");
    EXPECT_VARIANT(T, "num_cat=0", "num_cat=2", F, TS_ERR_PARSE, "Tree=0", "no cat_boundaries");
    EXPECT_VARIANT(T, "is_linear=0\nshrinkage=1\n\n\nTree=1", "is_linear=1\nshrinkage=1\n\n\nTree=1", F,
                   TS_ERR_UNSUPPORTED, "is_linear=1", "linear trees (is_linear=1");
    EXPECT_VARIANT(T, "num_class=1", "num_class=3", F, TS_ERR_UNSUPPORTED, "num_tree_per_iteration=1",
                   "differs from num_class");
    EXPECT_VARIANT(T, "num_tree_per_iteration=1", "num_tree_per_iteration=2", F, TS_ERR_UNSUPPORTED,
                   "num_tree_per_iteration=2", "differs from num_class");
    EXPECT_VARIANT(T, "num_class=1\n", "", F, TS_ERR_PARSE, NULL, "no num_class");
    EXPECT_VARIANT(T, "max_feature_idx=3\n", "", F, TS_ERR_PARSE, NULL, "no max_feature_idx");
    EXPECT_VARIANT(T, "max_feature_idx=3", "max_feature_idx=x", F, TS_ERR_PARSE, "max_feature_idx=x",
                   "bad max_feature_idx");
    EXPECT_VARIANT(T, "version=v4", "version=v9", F, TS_ERR_UNSUPPORTED, "version=v9", "version 'v9'");
    EXPECT_VARIANT(T, "split_feature=0 2", "split_feature=0 4", F, TS_ERR_INVALID_MODEL, "split_feature=0 4",
                   "split_feature 4 is beyond max_feature_idx 3");
    /* A cycle: node 1's left child is node 0 again. */
    EXPECT_VARIANT(T, "left_child=1 -1", "left_child=1 0", F, TS_ERR_INVALID_MODEL, "Tree=0", "reached twice");
    EXPECT_VARIANT(T, "left_child=1 -1", "left_child=1 5", F, TS_ERR_INVALID_MODEL, "Tree=0", "tree 0");
    EXPECT_VARIANT(T, "right_child=-3 -2", "right_child=-3 -3", F, TS_ERR_INVALID_MODEL, "Tree=0", "reached twice");
    /* An unreachable node and leaf: node 2 -> leaves 2 and 3 hangs off nothing. */
    {
        char *a = replace(T, "num_leaves=3", "num_leaves=4");
        char *b = replace(a, "split_feature=0 2", "split_feature=0 2 1");
        char *c = replace(b, "threshold=0.5 1.0000000180025095e-35", "threshold=0.5 1.0000000180025095e-35 3");
        char *d = replace(c, "decision_type=2 6", "decision_type=2 6 0");
        char *e = replace(d, "left_child=1 -1", "left_child=1 -1 -3");
        char *f = replace(e, "right_child=-3 -2", "right_child=-4 -2 -4");
        EXPECT_VARIANT(f, "leaf_value=0.25 0.5 -1", "leaf_value=0.25 0.5 -1 7", F, TS_ERR_INVALID_MODEL, "Tree=0",
                       "unreachable");
        /* A shared leaf: node 2 is reachable, its right child is leaf 1 again. */
        char *g = replace(f, "right_child=-4 -2 -4", "right_child=2 -2 -2");
        EXPECT_VARIANT(g, "leaf_value=0.25 0.5 -1", "leaf_value=0.25 0.5 -1 7", F, TS_ERR_INVALID_MODEL, "Tree=0",
                       "reached twice");
        free(a), free(b), free(c), free(d), free(e), free(f), free(g);
    }
    EXPECT_VARIANT(T, "leaf_value=0.25 0.5 -1", "leaf_value=0.25 0.5 inf", F, TS_ERR_INVALID_MODEL, "Tree=0",
                   "non-finite");
    EXPECT_VARIANT(T, "num_cat=0\nsplit_feature=0 2", "num_cat=0\nsplit_feature 0 2", F, TS_ERR_PARSE,
                   "split_feature 0",
                   "expected key=value");
    EXPECT_VARIANT(T, "shrinkage=1\n\n\nTree=1", "shrinkage=1\nleaf_value=1 2 3\n\n\nTree=1", F, TS_ERR_PARSE,
                   "leaf_value=1 2 3", "'leaf_value' appears twice");
    EXPECT_VARIANT(T, "tree_sizes=400 300", "tree_sizes=400 300 200", F, TS_ERR_PARSE, "tree_sizes",
                   "tree_sizes lists 3 trees but the file has 2");
    EXPECT_VARIANT(T, "end of trees\n", "junk here\n", F, TS_ERR_PARSE, "junk here",
                   "expected 'Tree=' or 'end of trees'");
    EXPECT_VARIANT(T, "Tree=1\n", "Tree=x\n", F, TS_ERR_PARSE, "Tree=x", "bad 'Tree=' line");
    EXPECT_ERROR("tree\nversion=v4\nnum_class=1\n", F, TS_ERR_PARSE, 0, "truncated");
}

static void test_errors_xgboost(void) {
    const char *T = XGB_TEMPLATE;
    const ts_model_format F = TS_FORMAT_XGBOOST_JSON;
    EXPECT_VARIANT(T, "\"split_type\":[0,0,0]", "\"split_type\":[1,0,0]", F, TS_ERR_INVALID_MODEL, "\"trees\"",
                   "categorical split without categories");
    EXPECT_VARIANT(T, "\"size_leaf_vector\":\"1\"", "\"size_leaf_vector\":\"3\"", F, TS_ERR_UNSUPPORTED, "\"trees\"",
                   "multi_output_tree");
    EXPECT_VARIANT(T, "\"name\":\"gbtree\"", "\"name\":\"gblinear\"", F, TS_ERR_UNSUPPORTED, "\"name\":\"gblinear\"",
                   "gblinear");
    EXPECT_VARIANT(T, "\"[5E-1]\"", "\"[5E-1,5E-1]\"", F, TS_ERR_INVALID_MODEL, "\"base_score\"",
                   "base_score has 2 values for a model of 1 outputs");
    EXPECT_VARIANT(T, "\"[5E-1]\"", "\"[abc]\"", F, TS_ERR_PARSE, "\"base_score\"", "bad base_score");
    EXPECT_VARIANT(T, "\"tree_info\":[0]", "\"tree_info\":[1]", F, TS_ERR_INVALID_MODEL, "\"tree_info\"",
                   "belongs to output 1, but the model has 1");
    EXPECT_VARIANT(T, "\"num_trees\":\"1\"", "\"num_trees\":\"2\"", F, TS_ERR_PARSE, "\"num_trees\"", "num_trees is 2");
    EXPECT_VARIANT(T, "\"left_children\":[1,-1,-1]", "\"left_children\":[1,0,-1]", F, TS_ERR_INVALID_MODEL, "\"trees\"",
                   "reached twice");
    EXPECT_VARIANT(T, "\"left_children\":[1,-1,-1]", "\"left_children\":[1,-1,7]", F, TS_ERR_INVALID_MODEL,
                   "\"trees\"", "node 2 has child 7, out of range");
    EXPECT_VARIANT(T, "\"right_children\":[2,-1,-1]", "\"right_children\":[1,-1,-1]", F, TS_ERR_INVALID_MODEL,
                   "\"trees\"", "reached twice");
    EXPECT_VARIANT(T, "\"right_children\":[2,-1,-1]", "\"right_children\":[9,-1,-1]", F, TS_ERR_INVALID_MODEL,
                   "\"trees\"", "out of range");
    EXPECT_VARIANT(T, "\"left_children\":[1,-1,-1]", "\"left_children\":[-1,-1,-1]", F, TS_ERR_INVALID_MODEL,
                   "\"trees\"", "unreachable");
    EXPECT_VARIANT(T, "\"split_conditions\":[5E-1,-1E0,2E0]", "\"split_conditions\":[5E-1,-1E0]", F, TS_ERR_PARSE,
                   "\"trees\"", "split_conditions has 2 values, expected num_nodes = 3");
    EXPECT_VARIANT(T, "\"split_conditions\":[5E-1,-1E0,2E0]", "\"split_conditions\":[5E-1,-1E0,2E]", F, TS_ERR_PARSE,
                   "\"split_conditions\"", "unexpected ']'");
    EXPECT_VARIANT(T, "\"split_conditions\":[5E-1,-1E0,2E0]", "\"split_conditions\":[5E-1,-1E0,\"x\"]", F,
                   TS_ERR_PARSE, "\"split_conditions\"", "expected a number");
    EXPECT_VARIANT(T, "\"split_conditions\":[5E-1,-1E0,2E0]", "\"split_conditions\":[NaN,-1E0,2E0]", F,
                   TS_ERR_INVALID_MODEL, "\"trees\"", "NaN threshold");
    EXPECT_VARIANT(T, "\"split_indices\":[1,0,0]", "\"split_indices\":[3,0,0]", F, TS_ERR_INVALID_MODEL, "\"trees\"",
                   "num_feature is 3");
    EXPECT_VARIANT(T, "\"split_indices\":[1,0,0]", "\"split_indices\":[-1,0,0]", F, TS_ERR_PARSE, "\"split_indices\"",
                   "bad split_indices");
    EXPECT_VARIANT(T, "\"default_left\":[1,0,0]", "\"default_left\":[2,0,0]", F, TS_ERR_PARSE, "\"default_left\"",
                   "expected 0 or 1");
    EXPECT_VARIANT(T, "\"num_nodes\":\"3\"", "\"num_nodes\":\"4\"", F, TS_ERR_PARSE, "\"trees\"",
                   "expected num_nodes = 4");
    EXPECT_VARIANT(T, "\"num_nodes\":\"3\",", "", F, TS_ERR_PARSE, "\"trees\"", "no tree_param.num_nodes");
    EXPECT_VARIANT(T, "\"name\":\"gbtree\"},", "\"name\":\"dart\"},", F, TS_ERR_PARSE, NULL, "weight_drop");
    EXPECT_VARIANT(T, "\"num_feature\":\"3\",\"num_target\"", "\"num_target\"", F, TS_ERR_PARSE, NULL, "num_feature");
    EXPECT_VARIANT(T, "{\"learner\":{", "{\"learner\":{,", F, TS_ERR_PARSE, NULL, "unexpected ','");
    EXPECT_VARIANT(T, "\"version\":[3,2,0]}\n", "\"version\":[3,2,0]}}\n", F, TS_ERR_PARSE, "\"version\"",
                   "end of the input");
    EXPECT_VARIANT(T, "\"iteration_indptr\":[0,1]", "\"iteration_indptr\":[0,1,]", F, TS_ERR_PARSE,
                   "\"iteration_indptr\"",
                   "unexpected ']'");
    EXPECT_VARIANT(T, "\"attributes\":{}", "\"attributes\":{\"a\":\"\\ud800\"}", F, TS_ERR_PARSE, NULL, "surrogate");
    EXPECT_VARIANT(T, "\"attributes\":{}", "\"attributes\":{\"a\":\"x\ty\"}", F, TS_ERR_PARSE, NULL,
                   "control character");
    EXPECT_ERROR("[1,2]", F, TS_ERR_PARSE, 1, "expected a JSON object");
    expect_error("{L\x00\x00\x00\x00\x00\x00\x00\x07learner{", 18, TS_FORMAT_AUTO, TS_ERR_PARSE, 0, "truncated UBJSON",
                 __LINE__);
    EXPECT_ERROR("{}", F, TS_ERR_PARSE, 0, "no learner.gradient_booster.name");
    /* Nesting deeper than the parser's limit is refused, not recursed into. */
    char deep[4096 + 16];
    size_t n = 0;
    n += (size_t)snprintf(deep, sizeof deep, "{\"a\":");
    while (n < 4096) deep[n++] = '[';
    deep[n] = '\0';
    EXPECT_ERROR(deep, F, TS_ERR_LIMIT, 1, "nested deeper");
    /* Skipped values may be any JSON (escapes, nested containers, literals). */
    char *ok = replace(T, "\"attributes\":{}",
                       "\"attributes\":{\"k\\n\\u00e9\\ud83d\\ude00\":[true,false,null,-0.5e+3,{\"x\":[]}]}");
    ts_model *m;
    ts_error err;
    CHECK_STATUS(ts_model_load_buffer(ok, strlen(ok), F, "ok.json", &m, &err), TS_OK);
    ts_model_free(m);
    free(ok);
}

static void test_errors_quickrank(void) {
    const char *T = QR_TEMPLATE;
    const ts_model_format F = TS_FORMAT_QUICKRANK_XML;
    EXPECT_VARIANT(T, "<threshold>0.25</threshold>", "<threshold>abc</threshold>", F, TS_ERR_PARSE, "<threshold>",
                   "tree 0: bad threshold 'abc'");
    EXPECT_VARIANT(T, "<threshold>0.25</threshold>", "", F, TS_ERR_PARSE, "  <split>", "needs <feature>, <threshold>");
    EXPECT_VARIANT(T, "<feature> 2 </feature>", "<feature>0</feature>", F, TS_ERR_PARSE, "<feature>", "start at 1");
    EXPECT_VARIANT(T, "<feature> 2 </feature>", "<feature>2.5</feature>", F, TS_ERR_PARSE, "<feature>", "bad feature");
    EXPECT_VARIANT(T, "</threshold>", "</thresh>", F, TS_ERR_PARSE, "</thresh>", "does not match <threshold>");
    EXPECT_VARIANT(T, "weight=\"0.5\"", "weight=\"x\"", F, TS_ERR_PARSE, "weight=", "bad weight");
    EXPECT_VARIANT(T, "weight=\"0.5\"", "weight=\"0.5", F, TS_ERR_PARSE, NULL, NULL);
    EXPECT_VARIANT(T, "<split pos=\"left\">", "<split pos=\"up\">", F, TS_ERR_PARSE, "pos=\"up\"", "pos=\"left\"");
    EXPECT_VARIANT(T, "<split pos=\"right\">", "<split pos=\"left\">", F, TS_ERR_PARSE, NULL, "two left children");
    EXPECT_VARIANT(T, "<output>1.0</output>", "<output>1.0</output><output>2</output>", F, TS_ERR_PARSE, NULL,
                   "two <output>");
    EXPECT_VARIANT(T, "<output>1.0</output>", "<output>1.0 2.0</output>", F, TS_ERR_PARSE, NULL, "bad output");
    EXPECT_VARIANT(T, "<output>1.0</output>", "<output>inf</output>", F, TS_ERR_INVALID_MODEL, "<tree id=\"1\"",
                   "non-finite");
    EXPECT_VARIANT(T, "<tree id='2' weight='2'><output>0.125</output></tree>", "<tree id='2'></tree>", F,
                   TS_ERR_PARSE, "<tree id='2'", "empty <tree>");
    EXPECT_VARIANT(T, "<ensemble>\n", "<ensemble>\n<bogus/>\n", F, TS_ERR_PARSE, "<bogus/>", "unexpected <bogus>");
    EXPECT_VARIANT(T, "<ensemble>\n", "<ensemble>\nstray text\n", F, TS_ERR_PARSE, "stray", "unexpected text");
    EXPECT_VARIANT(T, "<ensemble>", "<ensemble a=>", F, TS_ERR_PARSE, "<ensemble a", "quoted attribute value");
    EXPECT_VARIANT(T, "<!-- <tree> in a comment -->", "<!-- <tree> in a comment", F, TS_ERR_PARSE, NULL,
                   "unterminated comment");
    EXPECT_VARIANT(T, "<ensemble>", "<ensembles>", F, TS_ERR_PARSE, "</ensemble>", "does not match <ensembles>");
    EXPECT_ERROR("<ranker><info/></ranker>", F, TS_ERR_PARSE, 0, "no <ensemble>");
    EXPECT_ERROR("<ensemble></ensemble><ensemble></ensemble>", F, TS_ERR_PARSE, 1, "second <ensemble>");
    EXPECT_ERROR("</ensemble>", F, TS_ERR_PARSE, 1, "closes nothing");
    EXPECT_ERROR("<ensemble><tree><split><feature>1</feature><threshold>1</threshold>"
                 "<split pos='left'><output>1</output></split><split pos='right'><output>1</output></split>"
                 "<output>3</output></split></tree></ensemble>",
                 F, TS_ERR_PARSE, 1, "both an <output> and a split");
    /* Empty ensemble: a valid model with no trees. */
    ts_model *m;
    ts_error err;
    CHECK_STATUS(ts_model_load_buffer("<ensemble/>", 11, TS_FORMAT_AUTO, "e.xml", &m, &err), TS_OK);
    if (m) CHECK(m->n_trees == 0 && m->n_features == 0);
    ts_model_free(m);
}

/* Cutting a real file anywhere before its end marker must fail cleanly (the sanitizers
 * catch any read past the cut). */
static void truncate_all(const char *name, size_t keep_from) {
    size_t size;
    char *data = read_data_file(name, &size);
    CHECK_MSG(data != NULL, "cannot read %s", name);
    if (!data) return;
    size_t fails = 0;
    for (size_t cut = 0; cut < keep_from && cut < size; cut++) {
        char *copy = malloc(cut ? cut : 1); /* exact size: ASan sees any overread */
        memcpy(copy, data, cut);
        ts_error err;
        ts_model *m = (ts_model *)1;
        ts_status st = ts_model_load_buffer(copy, cut, TS_FORMAT_AUTO, name, &m, &err);
        if (st == TS_OK || m != NULL || strncmp(err.message, name, strlen(name)) != 0) {
            if (fails++ < 3) fprintf(stderr, "%s cut at %zu: %s (%s)\n", name, cut, ts_status_name(st), err.message);
            if (st == TS_OK) ts_model_free(m);
        }
        free(copy);
    }
    CHECK_MSG(fails == 0, "%s: %zu truncations loaded or gave an unnamed error", name, fails);
    free(data);
}

static size_t offset_of(const char *name, const char *marker, int last) {
    size_t size;
    char *data = read_data_file(name, &size);
    size_t at = 0;
    if (!data) return 0;
    for (size_t i = 0; i + strlen(marker) <= size; i++)
        if (memcmp(data + i, marker, strlen(marker)) == 0) {
            at = i;
            if (!last) break;
        }
    free(data);
    return at;
}

static void test_truncated_files(void) {
    truncate_all("lgb_small_zero_missing.txt", offset_of("lgb_small_zero_missing.txt", "end of trees", 0));
    truncate_all("rankeval_LightGBM.model.txt", offset_of("rankeval_LightGBM.model.txt", "feature importances:", 0));
    truncate_all("xgb_small_logistic.json", offset_of("xgb_small_logistic.json", "}", 1) + 1);
    truncate_all("xgb_small_v1_sqerr.json", offset_of("xgb_small_v1_sqerr.json", "}", 1) + 1);
    truncate_all("rankeval_quickrank.model.xml", offset_of("rankeval_quickrank.model.xml", "</ranker>", 1) + 8);
    truncate_all("msn_lambdamart_10trees_quickrank.xml",
                 offset_of("msn_lambdamart_10trees_quickrank.xml", "</ensemble>", 1) + 10);
}

/* Byte flips in a real file: anything may happen except a crash or an unnamed error. */
static void test_corrupted_files(void) {
    const char *names[] = {"lgb_small_lambdarank.txt", "xgb_small_dart.json", "rankeval_quickrank.model.xml"};
    const char flips[] = {'\0', '\n', '-', '9', '"', '<', '>', '{', ']', 'e', '.', ' '};
    for (size_t k = 0; k < COUNT(names); k++) {
        size_t size;
        char *data = read_data_file(names[k], &size);
        if (!data) continue;
        for (size_t i = 0; i < size; i += 7) {
            char *copy = malloc(size);
            memcpy(copy, data, size);
            copy[i] = flips[(i / 7) % sizeof flips];
            ts_error err;
            ts_model *m = NULL;
            ts_status st = ts_model_load_buffer(copy, size, TS_FORMAT_AUTO, names[k], &m, &err);
            if (st != TS_OK)
                CHECK_MSG(m == NULL && strncmp(err.message, names[k], strlen(names[k])) == 0, "%s", err.message);
            ts_model_free(m);
            free(copy);
        }
        free(data);
    }
}

/* RankLib: Float.parseFloat numbers, NaN reads 0, a random forest scores the mean of its
 * ensembles (weights divided by their number); QuickRank refuses a second ensemble. */
static void test_ranklib(void) {
    static const char RF[] =
        "## Random Forests\n## No. of bags = 2\n## Learning rate = 0.1\n\n"
        "<ensemble>\n<tree id=\"1\" weight=\"0.1\"><split><feature>1 </feature><threshold> -0.5 </threshold>"
        "<split pos=\"left\"><output>1.0000000596046448 </output></split>"
        "<split pos=\"right\"><output>2.0 </output></split></split></tree>\n</ensemble>\n"
        "<ensemble>\n<tree id=\"1\" weight=\"0.1\"><split><feature>2 </feature><threshold> 0.0 </threshold>"
        "<split pos=\"left\"><output>4.0 </output></split>"
        "<split pos=\"right\"><output>8.0 </output></split></split></tree>\n</ensemble>\n";
    ts_model *m = NULL;
    ts_error err;
    CHECK(tsio_detect_model_format(RF, strlen(RF)) == TS_FORMAT_RANKLIB);
    CHECK_STATUS(ts_model_load_buffer(RF, strlen(RF), TS_FORMAT_AUTO, "rf.txt", &m, &err), TS_OK);
    if (m) {
        const double w = (double)0.1f / 2;
        CHECK(m->format == TS_FORMAT_RANKLIB && m->n_trees == 2 && m->trees[0].weight == w);
        /* 1.0000000596046448 is above 1 + 2^-24: Float.parseFloat gives the next float up */
        CHECK_SAME_DOUBLE(m->trees[0].leaf_values[0], (double)nextafterf(1.0f, 2.0f));
        const float nan_row[3] = {0, NAN, NAN}; /* NaN reads 0: right in tree 1, left in tree 2 */
        CHECK_SAME_DOUBLE(ref_score(m, nan_row), w * 2.0 + w * 4.0);
        const float row[3] = {0, -0.5f, 0.25f};
        CHECK_SAME_DOUBLE(ref_score(m, row), w * (double)nextafterf(1.0f, 2.0f) + w * 8.0);
    }
    ts_model_free(m);
    EXPECT_ERROR(RF, TS_FORMAT_QUICKRANK_XML, TS_ERR_PARSE, 8, "second <ensemble>");
    char *bad = strdup(RF);
    memcpy(strstr(bad, "<feature>2"), "<feature>0", 10);
    EXPECT_ERROR(bad, TS_FORMAT_RANKLIB, TS_ERR_PARSE, 9, "feature id 0 (RankLib feature ids start at 1)");
    free(bad);
}

/* LightGBM dump_model() JSON: read as the text model; +-1e300 thresholds are +-inf; errors
 * point at the JSON's lines. */
static void test_lightgbm_json(void) {
    static const char J[] =
        "{\"name\": \"tree\", \"version\": \"v4\", \"num_class\": 1, \"max_feature_idx\": 1,\n"
        "\"objective\": \"lambdarank\", \"feature_names\": [\"a\", \"b\"], \"tree_info\": [\n"
        "{\"tree_index\": 0, \"num_leaves\": 3, \"tree_structure\": {\"split_index\": 0, \"split_feature\": 1,"
        " \"threshold\": 1e300, \"decision_type\": \"<=\", \"default_left\": false, \"missing_type\": \"NaN\","
        " \"left_child\": {\"split_index\": 1, \"split_feature\": 0, \"threshold\": 0.5, \"decision_type\": \"<=\","
        " \"default_left\": true, \"missing_type\": \"None\", \"left_child\": {\"leaf_index\": 0, \"leaf_value\": 1},"
        " \"right_child\": {\"leaf_index\": 2, \"leaf_value\": 3}},"
        " \"right_child\": {\"leaf_index\": 1, \"leaf_value\": 2}}},\n"
        "{\"tree_index\": 1, \"num_leaves\": 1, \"tree_structure\": {\"leaf_value\": 0.25}}]}\n";
    ts_model *m = NULL;
    ts_error err;
    CHECK(tsio_detect_model_format(J, strlen(J)) == TS_FORMAT_LIGHTGBM_JSON);
    CHECK_STATUS(ts_model_load_buffer(J, strlen(J), TS_FORMAT_AUTO, "m.json", &m, &err), TS_OK);
    if (m) {
        CHECK(m->format == TS_FORMAT_LIGHTGBM_JSON && m->n_trees == 2 && m->compares_double);
        CHECK(!strcmp(m->objective, "lambdarank") && m->n_feature_names == 2);
        const float rows[][2] = {{0.5f, INFINITY}, {0.75f, 1e38f}, {NAN, NAN}};
        const double want[] = {1 + 0.25, 3 + 0.25, 2 + 0.25}; /* +inf <= inf: left */
        for (size_t i = 0; i < COUNT(want); i++) CHECK_SAME_DOUBLE(ref_score(m, rows[i]), want[i]);
    }
    ts_model_free(m);
    char *bad = strdup(J);
    memcpy(strstr(bad, "\"split_feature\": 0"), "\"split_feature\": 7", 18);
    EXPECT_ERROR(bad, TS_FORMAT_AUTO, TS_ERR_INVALID_MODEL, 3, "tree 0: ");
    free(bad);
    EXPECT_ERROR("{\"name\": \"tree\", \"tree_info\": [", TS_FORMAT_LIGHTGBM_JSON, TS_ERR_PARSE, 1, "");
}

/* XGBoost adds the base score and the trees' leaves in float32: a model whose margin can
 * pass FLT_MAX scores inf there (3e38 + 3e38) and 6.0000000109955115e+38 in treescore's
 * double sum. Refused; a big base alone (3e38 + 2) loads. */
static void test_xgboost_float32_overflow(void) {
    ts_model *m = NULL;
    ts_error err;
    char *a = replace(XGB_TEMPLATE, "\"[5E-1]\"", "\"[3E38]\"");
    char *b = a ? replace(a, "\"split_conditions\":[5E-1,-1E0,2E0]", "\"split_conditions\":[5E-1,-1E0,3E38]") : NULL;
    CHECK(b != NULL);
    if (!b) {
        free(a);
        return;
    }
    CHECK_STATUS(ts_model_load_buffer(b, strlen(b), TS_FORMAT_XGBOOST_JSON, "big.json", &m, &err), TS_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.message, "float32") != NULL, "message: %s", err.message);
    CHECK(m == NULL);
    ts_model_free(m);
    CHECK_STATUS(ts_model_load_buffer(a, strlen(a), TS_FORMAT_XGBOOST_JSON, "base.json", &m, &err), TS_OK);
    ts_model_free(m);
    free(a);
    free(b);
}

int main(void) {
    RUN_TEST(test_detect);
    RUN_TEST(test_real_files_info);
    RUN_TEST(test_scores_lightgbm);
    RUN_TEST(test_scores_xgboost);
    RUN_TEST(test_scores_quickrank);
    RUN_TEST(test_thresholds);
    RUN_TEST(test_errors_general);
    RUN_TEST(test_errors_lightgbm);
    RUN_TEST(test_errors_xgboost);
    RUN_TEST(test_xgboost_float32_overflow);
    RUN_TEST(test_errors_quickrank);
    RUN_TEST(test_ranklib);
    RUN_TEST(test_lightgbm_json);
    RUN_TEST(test_truncated_files);
    RUN_TEST(test_corrupted_files);
    return check_summary("test_loaders");
}
