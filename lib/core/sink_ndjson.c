// SPDX-License-Identifier: Apache-2.0
/*
 * sink_ndjson.c - rows into the session files, byte for byte what the
 * writer always wrote: each channel is a file, each call takes its lock.
 * Write errors are the writer's to count (write_errors, lost lines in
 * session_end), so the operations report none to the fan-out.
 */
#include "core/sink_ndjson.h"

#include <string.h>

static const char *const file_names[GPUFL_FILE_COUNT] = {"device", "scope", "system"};

int gpufl__ndjson_sink_open(gpufl__ndjson_sink_t *s, const char *dir,
                            const gpufl__session_ident_t *ident, uint64_t rotate_bytes,
                            int sync_each_write) {
    memset(s, 0, sizeof *s);
    for (int i = 0; i < GPUFL_FILE_COUNT; i++) {
        int rc = gpufl__writer_open(&s->files[i], dir, file_names[i], ident, rotate_bytes,
                                    sync_each_write);
        s->files_open = i + 1;
        if (rc) {
            gpufl__ndjson_sink_close(s);
            return rc;
        }
    }
    return 0;
}

void gpufl__ndjson_sink_close(gpufl__ndjson_sink_t *s) {
    for (int i = 0; i < s->files_open; i++) gpufl__writer_close(&s->files[i]);
    s->files_open = 0;
}

static int ndjson_record(void *self, enum gpufl__file_id channel, const gpufl__line_t *line,
                         const gpufl__intern_t *dict) {
    gpufl__ndjson_sink_t *s = self;
    gpufl__writer_t *f = &s->files[channel];
    pthread_mutex_lock(&f->lock);
    gpufl__writer_put_line(f, dict, line);
    pthread_mutex_unlock(&f->lock);
    return 0;
}

static int ndjson_batch(void *self, enum gpufl__file_id channel, const gpufl__batch_t *b,
                        const gpufl__intern_t *dict) {
    gpufl__ndjson_sink_t *s = self;
    gpufl__writer_t *f = &s->files[channel];
    pthread_mutex_lock(&f->lock);
    gpufl__writer_put_batch(f, dict, b);
    pthread_mutex_unlock(&f->lock);
    return 0;
}

static int ndjson_flush(void *self) {
    gpufl__ndjson_sink_t *s = self;
    for (int i = 0; i < s->files_open; i++) {
        pthread_mutex_lock(&s->files[i].lock);
        gpufl__writer_flush(&s->files[i]);
        pthread_mutex_unlock(&s->files[i].lock);
    }
    return 0;
}

static void ndjson_close(void *self) { gpufl__ndjson_sink_close(self); }

const gpufl__sink_ops_t gpufl__ndjson_sink_ops = {
    .name = "ndjson",
    .record = ndjson_record,
    .batch = ndjson_batch,
    .flush = ndjson_flush,
    .close = ndjson_close,
};
