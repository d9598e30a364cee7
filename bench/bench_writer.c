// SPDX-License-Identifier: Apache-2.0
/*
 * bench_writer.c - writer throughput: scope events encoded and appended to a
 * session file per second, on one core.
 *
 * It drives the collector's own stages (intern, batch rows, column-wise
 * encoding, write()) on this thread with realistic scope rows: a few dozen
 * distinct names, nested paths, increasing timestamps. The end-to-end figure
 * (a producer thread and the collector thread running together) comes from
 * bench_scope; this one isolates the cost per event of the writer itself.
 * It runs twice: batches encoded into the file directly, then handed to
 * the collector's fan-out with only the session files attached (what every
 * session does), so the two figures show what the fan-out costs.
 */
#include "util/intern.h"
#include "core/sink_ndjson.h"
#include "core/writer.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const gpufl__col_def_t cols[] = {{"ts_ns", GPUFL_COL_INT},  {"tid", GPUFL_COL_INT},
                                        {"id", GPUFL_COL_INT},     {"parent", GPUFL_COL_INT},
                                        {"depth", GPUFL_COL_INT},  {"name", GPUFL_COL_DICT},
                                        {"tag", GPUFL_COL_DICT},   {"path", GPUFL_COL_DICT},
                                        {"repeat", GPUFL_COL_INT}, {"warmup", GPUFL_COL_INT}};

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Fills and encodes `events` scope_begin rows into f: directly, or through
 * fan (when not NULL). Returns the CPU seconds it took. */
static double run(long events, gpufl__writer_t *f, gpufl__fanout_t *fan, gpufl__batch_t *batch,
                  gpufl__intern_t *dict) {
    char name[32];
    double t0 = cpu_seconds();
    int64_t ts = 1000;
    for (long i = 0; i < events; i++) {
        int n = snprintf(name, sizeof name, "phase_%ld", i % 40);
        uint32_t name_id = gpufl__intern(dict, name, (size_t)n);
        gpufl__cell_t *row = gpufl__batch_row(batch);
        if (!row) {
            if (fan)
                gpufl__fanout_batch(fan, GPUFL_FILE_SCOPE, batch);
            else
                gpufl__batch_encode(batch, f, dict);
            if (f->out.len > (1u << 20)) gpufl__writer_flush(f);
            row = gpufl__batch_row(batch);
        }
        ts += 137 + i % 50;
        row[0].i = ts;
        row[1].i = 4711;
        row[2].i = ((int64_t)1 << 40) | i;
        row[3].i = ((int64_t)1 << 40) | (i / 4);
        row[4].i = 2;
        row[5].i = name_id;
        row[6].i = 0;
        row[7].i = name_id;
        row[8].i = 0;
        row[9].i = 0;
    }
    if (fan)
        gpufl__fanout_batch(fan, GPUFL_FILE_SCOPE, batch);
    else
        gpufl__batch_encode(batch, f, dict);
    gpufl__writer_flush(f);
    return cpu_seconds() - t0;
}

static void remove_files(const char *dir) {
    const char *names[] = {"device", "scope", "system"};
    for (int i = 0; i < 3; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/%s.log", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

int main(int argc, char **argv) {
    const long events = argc > 1 && strcmp(argv[1], "--help") != 0 ? atol(argv[1]) : 4000000;
    if (argc > 1 && strcmp(argv[1], "--help") == 0) {
        puts("usage: bench_writer [EVENTS]\nEncodes and writes EVENTS scope events (default 4M), "
             "into the file and through the sinks' fan-out (three alternating rounds), and "
             "prints the best events per CPU-second of each.");
        return 0;
    }
    char dir[] = "/tmp/gpufl-bench-writer-XXXXXX", dir2[] = "/tmp/gpufl-bench-writer-XXXXXX";
    if (!mkdtemp(dir) || !mkdtemp(dir2)) return 1;
    gpufl__session_ident_t ident = {
        .session_id = "bench", .app_name = "bench_writer", .hostname = "localhost", .pid = 1};
    gpufl__writer_t f;
    gpufl__ndjson_sink_t files;
    gpufl__fanout_t fan;
    gpufl__batch_t batch;
    gpufl__intern_t *dict = gpufl__intern_create(1u << 20, 64u << 20);
    if (!dict || gpufl__writer_open(&f, dir, "scope", &ident, (uint64_t)1 << 40, 0) ||
        gpufl__ndjson_sink_open(&files, dir2, &ident, (uint64_t)1 << 40, 0) ||
        gpufl__batch_init(&batch, "scope_begin", cols, 10)) {
        fprintf(stderr, "bench_writer: setup failed: %s\n", gpufl_last_error());
        return 1;
    }
    gpufl__fanout_init(&fan, dict);
    gpufl__fanout_attach(&fan, &gpufl__ndjson_sink_ops, &files);
    /* Alternating rounds, the best of each: a shared machine's noise comes in bursts. */
    double direct = 1e9, sinks = 1e9;
    uint64_t bytes = 0;
    for (int round = 0; round < 3; round++) {
        uint64_t before = f.bytes_total;
        double d = run(events, &f, NULL, &batch, dict);
        double s = run(events, &files.files[GPUFL_FILE_SCOPE], &fan, &batch, dict);
        bytes = f.bytes_total - before;
        if (d < direct) direct = d;
        if (s < sinks) sinks = s;
    }
    printf("writer: %ld events in %.3f CPU s = %.2f M events/s, %.1f bytes/event\n", events, direct,
           (double)events / direct / 1e6, (double)bytes / (double)events);
    printf("writer through the sinks (session files only): %.2f M events/s, %.3fx the direct "
           "time\n",
           (double)events / sinks / 1e6, sinks / direct);
    gpufl__writer_close(&f);
    gpufl__fanout_close(&fan);
    remove_files(dir);
    remove_files(dir2);
    gpufl__batch_fini(&batch);
    gpufl__intern_destroy(dict);
    return 0;
}
