/* data_csv.h: the CSV and TSV data format's hooks for the data reader (data_reader.c). */
#ifndef TS_DATA_DATA_CSV_H
#define TS_DATA_DATA_CSV_H

#include "data/data_core.h"

extern const tsio_format_ops tsio_csv_ops;

#endif /* TS_DATA_DATA_CSV_H */
