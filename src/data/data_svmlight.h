/* data_svmlight.h: the SVMlight / LETOR data format's hooks for the data reader (data_reader.c). */
#ifndef TS_IO_DATA_SVMLIGHT_H
#define TS_IO_DATA_SVMLIGHT_H

#include "data/data_core.h"

extern const tsio_format_ops tsio_svmlight_ops;

#endif /* TS_IO_DATA_SVMLIGHT_H */
