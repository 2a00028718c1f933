/* oblivious_avx512vbmi.c: the oblivious kernel for AVX-512 with VBMI: oblivious_avx512.c's, its leaf values of trees of 1-8 levels looked up as byte planes (vpermb, vpermi2b) and transposed into doubles. */
#define TS_ISA_FILE /* built with the AVX-512 flags and -mavx512vbmi: see CMakeLists.txt */
#define OB_VBMI 1
#include "engines/x86/oblivious_avx512.c"
