/* data_raw.h: the raw float32 matrix data format's hooks for the data reader (data_reader.c). */
#ifndef TS_DATA_DATA_RAW_H
#define TS_DATA_DATA_RAW_H

#include "data/data_core.h"

extern const tsio_format_ops tsio_raw_ops;

#endif /* TS_DATA_DATA_RAW_H */
