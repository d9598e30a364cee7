// SPDX-License-Identifier: Apache-2.0
/*
 * sink_ndjson.h - the session files as a sink: device.log, scope.log and
 * system.log (writer.h), the collector's first sink. The collector embeds
 * it, for the counters of its files (bytes, errors, pending lines).
 */
#ifndef GPUFL_CORE_SINK_NDJSON_H
#define GPUFL_CORE_SINK_NDJSON_H

#include "core/sink.h"
#include "core/writer.h"

struct gpufl__ndjson_sink {
    gpufl__writer_t files[GPUFL_FILE_COUNT];
    int files_open;
};

/* Creates the three files in dir. On failure every file opened is closed. */
int gpufl__ndjson_sink_open(gpufl__ndjson_sink_t *s, const char *dir,
                            const gpufl__session_ident_t *ident, uint64_t rotate_bytes,
                            int sync_each_write);
/* Writes what is pending and closes the files (the sink's close); accepts a
 * sink whose open failed. */
void gpufl__ndjson_sink_close(gpufl__ndjson_sink_t *s);

#endif
