// SPDX-License-Identifier: Apache-2.0
/*
 * bench_reader.c - how fast the analysis library loads a large session: a
 * synthetic device.log of N kernel rows (default 1,000,000) in the writer's
 * batches of 4096, with 40 kernel names, copies every 100 kernels and a
 * scope.log of nested scopes, loaded by gpufl__model_load (the reader and
 * the model every report and tool uses), then rendered as the report in
 * each format (text, JSON, Markdown, HTML) to /dev/null.
 * Targets: 1 M kernel records load in under 1 s; the text report of them
 * renders in well under 0.5 s.
 *
 * Usage: bench_reader [--kernels N] [--runs R] [--keep DIR]
 */
#include "analysis/insights.h"
#include "analysis/model.h"
#include "analysis/report.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BATCH 4096
#define NAMES 40

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void header(FILE *f, const char *file) {
    fprintf(f,
            "{\"type\":\"header\",\"v\":1,\"format\":\"gpufl-log\",\"file\":\"%s\",\"segment\":0,"
            "\"session_id\":\"20261122T000000.000Z-1-bench\",\"app_name\":\"bench_reader\","
            "\"pid\":1,\"hostname\":\"bench\",\"epoch_ns\":\"1000000000000\","
            "\"epoch_unix_us\":1795305600000000,\"clock\":\"monotonic\","
            "\"gpufl_version\":\"0.1.0\"}\n",
            file);
}

/* One column of a batch: "name":[v(i) for the rows]. */
static void column(FILE *f, const char *name, long first, long n, long (*value)(long), int last) {
    fprintf(f, "\"%s\":[", name);
    for (long i = first; i < first + n; i++) fprintf(f, i > first ? ",%ld" : "%ld", value(i));
    fputs(last ? "]}\n" : "],", f);
}

static long v_start(long i) { return 1000000 + i * 3000; }
static long v_end(long i) { return 1000000 + i * 3000 + 1000 + (i % 17) * 50; }
static long v_zero(long i) { return (void)i, 0; }
static long v_one(long i) { return (void)i, 1; }
static long v_stream(long i) { return 7 + i % 4; }
static long v_corr(long i) { return 100 + i; }
static long v_name(long i) { return 1 + 2 * (i % NAMES); }
static long v_demangled(long i) { return 2 + 2 * (i % NAMES); }
static long v_grid(long i) { return 64 << (i % 5); }
static long v_block(long i) { return 128 << (i % 3); }
static long v_regs(long i) { return 32 + (i % 6) * 16; }
static long v_smem(long i) { return (i % 4) * 4096; }
static long v_scope(long i) { return 1 + (i / 1000) % 3; }

static int write_session(const char *dir, long kernels) {
    char path[4200];
    snprintf(path, sizeof path, "%s/device.log", dir);
    FILE *f = fopen(path, "w");
    if (f == NULL) return -1;
    header(f, "device");
    fputs("{\"type\":\"dict\",\"v\":1,\"id\":[", f);
    for (int k = 0; k < 2 * NAMES; k++) fprintf(f, k ? ",%d" : "%d", k + 1);
    fputs("],\"str\":[", f);
    for (int k = 0; k < NAMES; k++)
        fprintf(f, "%s\"_Z7kernel%dPfi\",\"kernel%d(float*, int)\"", k ? "," : "", k, k);
    fputs("]}\n", f);
    for (long first = 0; first < kernels; first += BATCH) {
        long n = kernels - first < BATCH ? kernels - first : BATCH;
        fputs("{\"type\":\"kernel\",\"v\":1,", f);
        column(f, "start_ns", first, n, v_start, 0);
        column(f, "end_ns", first, n, v_end, 0);
        column(f, "device", first, n, v_zero, 0);
        column(f, "context", first, n, v_one, 0);
        column(f, "stream", first, n, v_stream, 0);
        column(f, "correlation", first, n, v_corr, 0);
        column(f, "name", first, n, v_name, 0);
        column(f, "grid_x", first, n, v_grid, 0);
        column(f, "grid_y", first, n, v_one, 0);
        column(f, "grid_z", first, n, v_one, 0);
        column(f, "block_x", first, n, v_block, 0);
        column(f, "block_y", first, n, v_one, 0);
        column(f, "block_z", first, n, v_one, 0);
        column(f, "registers", first, n, v_regs, 0);
        column(f, "static_smem_bytes", first, n, v_smem, 0);
        column(f, "dynamic_smem_bytes", first, n, v_zero, 0);
        column(f, "local_bytes_per_thread", first, n, v_zero, 0);
        column(f, "graph_id", first, n, v_zero, 0);
        column(f, "graph_node", first, n, v_zero, 0);
        column(f, "demangled", first, n, v_demangled, 0);
        column(f, "scope", first, n, v_scope, 1);
    }
    long end_ns = v_end(kernels) + 1000;
    fprintf(f, "{\"type\":\"session_end\",\"v\":1,\"ts_ns\":%ld,\"duration_ns\":%ld}\n", end_ns,
            end_ns);
    if (fclose(f) != 0) return -1;

    snprintf(path, sizeof path, "%s/scope.log", dir);
    f = fopen(path, "w");
    if (f == NULL) return -1;
    header(f, "scope");
    fputs("{\"type\":\"dict\",\"v\":1,\"id\":[200,201,202,203],\"str\":[\"step\",\"forward\","
          "\"step/forward\",\"step/backward\"]}\n",
          f);
    fprintf(f, "{\"type\":\"scope_begin\",\"v\":1,\"ts_ns\":[1000,2000,3000],\"tid\":[9,9,9],"
               "\"id\":[1,2,3],\"parent\":[0,1,1],\"depth\":[1,2,2],\"name\":[200,201,201],"
               "\"tag\":[0,0,0],\"path\":[200,202,203],\"repeat\":[0,0,0]}\n");
    fprintf(f,
            "{\"type\":\"scope_end\",\"v\":1,\"ts_ns\":[%ld,%ld,%ld],\"id\":[2,3,1],"
            "\"implicit\":[0,0,0]}\n",
            end_ns - 3, end_ns - 2, end_ns - 1);
    fprintf(f, "{\"type\":\"session_end\",\"v\":1,\"ts_ns\":%ld,\"duration_ns\":%ld}\n", end_ns,
            end_ns);
    return fclose(f);
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    long kernels = 1000000;
    int runs = 3;
    const char *keep = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--kernels") == 0 && i + 1 < argc) {
            kernels = atol(argv[++i]);
        } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            runs = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--keep") == 0 && i + 1 < argc) {
            keep = argv[++i];
        } else {
            fprintf(stderr, "usage: bench_reader [--kernels N] [--runs R] [--keep DIR]\n");
            return strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
    }
    if (kernels < 1 || runs < 1 || runs > 50) {
        fprintf(stderr, "bench_reader: --kernels and --runs must be positive (runs <= 50)\n");
        return 2;
    }
    char dir[4096];
    if (keep) {
        snprintf(dir, sizeof dir, "%s", keep);
        mkdir(dir, 0755);
    } else {
        snprintf(dir, sizeof dir, "/tmp/gpufl-bench-reader-XXXXXX");
        if (mkdtemp(dir) == NULL) {
            perror("mkdtemp");
            return 1;
        }
    }
    if (write_session(dir, kernels) != 0) {
        perror("writing the session");
        return 1;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/device.log", dir);
    struct stat st;
    stat(path, &st);
    printf("reader: %ld kernel rows, device.log %.1f MiB, %d runs\n", kernels,
           (double)st.st_size / 1048576.0, runs);

    static const char *const fmt_names[4] = {"text", "json", "markdown", "html"};
    double load[50], render[4][50], insights[50];
    for (int r = 0; r < runs; r++) {
        gpufl__model_t *m = NULL;
        double t0 = now_s();
        if (gpufl__model_load(&m, dir) != 0) {
            fprintf(stderr, "bench_reader: load failed\n");
            return 1;
        }
        double t1 = now_s();
        FILE *null = fopen("/dev/null", "w");
        for (int f = 0; f < 4; f++) {
            double s0 = now_s();
            if (gpufl__report_write_format(m, (gpufl_report_format_t)f, null) != 0) {
                fprintf(stderr, "bench_reader: the %s report failed\n", fmt_names[f]);
                return 1;
            }
            render[f][r] = now_s() - s0;
        }
        fclose(null);
        /* Every format runs the insight rules once; their share, alone: */
        gpufl__insights_t in;
        double s0 = now_s();
        gpufl__insights_compute(&in, m);
        insights[r] = now_s() - s0;
        gpufl__insights_free(&in);
        if (r == 0 && (long)m->n_kernels != kernels) {
            fprintf(stderr, "bench_reader: loaded %zu kernels of %ld\n", m->n_kernels, kernels);
            return 1;
        }
        gpufl__model_destroy(m);
        load[r] = t1 - t0;
    }
    qsort(load, (size_t)runs, sizeof load[0], compare);
    printf("reader: load  median %.3f s  best %.3f s  (%.2f M rows/s)\n", load[runs / 2], load[0],
           (double)kernels / load[runs / 2] / 1e6);
    for (int f = 0; f < 4; f++) {
        qsort(render[f], (size_t)runs, sizeof render[f][0], compare);
        printf("reader: report %-8s median %.3f s  best %.3f s\n", fmt_names[f],
               render[f][runs / 2], render[f][0]);
    }
    qsort(insights, (size_t)runs, sizeof insights[0], compare);
    printf("reader: of which insight rules median %.3f s  best %.3f s\n", insights[runs / 2],
           insights[0]);
    printf("reader: target 1 M rows < 1 s: %s\n",
           kernels >= 1000000 && load[runs / 2] < (double)kernels / 1e6 ? "met" : "not met");
    printf("reader: target text report of 1 M rows < 0.5 s: %s\n",
           kernels >= 1000000 && render[0][runs / 2] - insights[runs / 2] < 0.5
               ? "met (without the insight rules)"
               : "not met");
    if (!keep) {
        unlink(path);
        snprintf(path, sizeof path, "%s/scope.log", dir);
        unlink(path);
        rmdir(dir);
    }
    return 0;
}
