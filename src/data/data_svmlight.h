/* data_svmlight.h: the SVMlight / LETOR data format's hooks for the data reader (data_reader.c). */
#ifndef TS_DATA_DATA_SVMLIGHT_H
#define TS_DATA_DATA_SVMLIGHT_H

#include "data/data_core.h"

extern const tsio_format_ops tsio_svmlight_ops;

#endif /* TS_DATA_DATA_SVMLIGHT_H */
