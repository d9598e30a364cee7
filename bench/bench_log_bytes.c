// SPDX-License-Identifier: Apache-2.0
/*
 * bench_log_bytes.c - bytes per kernel of a Trace session's kernel rows, plain (kernel v 1,
 * what the writer wrote before compact lines) and compact (v 2), raw and gzipped at levels 1
 * (what the uploader sends) and 6, side by side on the same rows.
 *
 * The rows are a PyTorch-like training loop fed to the real encoder (gpufl__wire_batch_line,
 * 4096 rows a line, as the collector fills them): ~20 distinct kernels with their launch
 * configurations, a few streams, launch gaps of 2-50 us (each position of a step its own gap,
 * 3 % jitter), durations of 3-500 us (0.5 % + 0.3 us jitter per kernel), 1-3 us between
 * kernels of a busy stream, the host waiting for the GPU at the end of each step, a scope per
 * step, stacks per call site and op external ids. Every compact line is decoded back
 * (util/colcode.c) and must equal its plain line: the figures are of a lossless encoding.
 * Usage: bench_log_bytes [KERNELS [DIR]] (default 200000; DIR: where to write the lines,
 * kernel-v1.log and kernel-v2.log, to look at them).
 */
#include "analysis/reader.h"
#include "core/wire.h"

#include <gpufl/gpufl.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#define N_KERNELS 20
#define STEP_LEN  48 /* launches per training step */

typedef struct kernel_kind {
    int64_t grid[3], block[3], regs, ssmem, dsmem, dur_ns, stream;
    int grid_varies; /* a grid that follows the batch's shape */
} kernel_kind_t;

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static int64_t uniform(int64_t lo, int64_t hi) { /* [lo, hi] */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return lo + (int64_t)(rng % (uint64_t)(hi - lo + 1));
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct out {
    char *data;
    size_t len, cap;
} out_t;

static void append(out_t *o, const char *s, size_t n) {
    if (o->len + n > o->cap) {
        o->cap = (o->len + n) * 2;
        o->data = realloc(o->data, o->cap);
        if (!o->data) abort();
    }
    memcpy(o->data + o->len, s, n);
    o->len += n;
}

/* CPU seconds the reader's scanner takes over every line of o (decoding compact ones). */
static double scan_s(const out_t *o, long *rows) {
    gpufl__reader_scanner_t s = {0};
    gpufl__reader_batch_t b;
    double t0 = now_s();
    *rows = 0;
    for (const char *p = o->data, *end = o->data + o->len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (gpufl__reader_scan_batch(&s, p, (size_t)(nl - p), &b) == 1) *rows += (long)b.rows;
        p = nl + 1;
    }
    double t = now_s() - t0;
    gpufl__reader_scanner_fini(&s);
    return t;
}

static size_t gz_size(const out_t *o, int level) {
    z_stream z = {0};
    if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) abort();
    size_t cap = deflateBound(&z, o->len), total;
    unsigned char *dst = malloc(cap);
    z.next_in = (unsigned char *)o->data;
    z.avail_in = (uInt)o->len;
    z.next_out = dst;
    z.avail_out = (uInt)cap;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) abort();
    total = z.total_out;
    deflateEnd(&z);
    free(dst);
    return total;
}

/* The compact line, decoded, must be the plain line. */
static int same_rows(const char *plain, size_t plain_len, const char *compact, size_t len) {
    json_error_t e;
    json_t *a = json_loadb(plain, plain_len, 0, &e), *b = json_loadb(compact, len, 0, &e);
    char why[160] = "";
    int ok = a && b && gpufl__colcode_decode_json(b, why, sizeof why) == 0;
    if (ok) {
        json_object_del(a, "v"), json_object_del(b, "v");
        ok = json_equal(a, b);
    }
    if (!ok)
        fprintf(stderr, "bench_log_bytes: a compact line does not decode to its rows %s\n", why);
    json_decref(a);
    json_decref(b);
    return ok;
}

int main(int argc, char **argv) {
    long kernels = argc > 1 ? atol(argv[1]) : 200000;
    kernel_kind_t kinds[N_KERNELS];
    for (int k = 0; k < N_KERNELS; k++) {
        static const int64_t blocks[] = {128, 256, 512, 1024, 64};
        kinds[k] = (kernel_kind_t){{uniform(1, 4096), uniform(1, 3) == 1 ? uniform(2, 64) : 1, 1},
                                   {blocks[uniform(0, 4)], 1, 1},
                                   uniform(16, 128),
                                   uniform(0, 2) ? 0 : 1024 * uniform(1, 48),
                                   uniform(0, 3) ? 0 : 1024 * uniform(1, 64),
                                   uniform(3000, 500000),
                                   7 + 6 * uniform(0, 2),
                                   k % 7 == 0};
    }
    int seq[STEP_LEN]; /* the step's launches: which kernel, and the host's gap before it */
    int64_t gap[STEP_LEN];
    for (int i = 0; i < STEP_LEN; i++) seq[i] = (int)uniform(0, N_KERNELS - 1);
    for (int i = 0; i < STEP_LEN; i++) gap[i] = uniform(2000, 50000);

    gpufl__batch_t plain, compact;
    if (gpufl__batch_init(&plain, "kernel", gpufl__wire_kernel.cols, gpufl__wire_kernel.ncols) ||
        gpufl__batch_init_table(&compact, &gpufl__wire_kernel))
        return 1;
    out_t outs[2] = {{0}};
    gpufl__buf_t line;
    gpufl__buf_init(&line, (size_t)1 << 28);
    double encode_s[2] = {0, 0};
    int64_t host_ns = 5000000000, stream_free[32] = {0}, corr = 1000, ext = 40000, scope = 100;
    int ok = 1;
    for (long i = 0; i < kernels; i++) {
        int step_i = (int)(i % STEP_LEN);
        if (step_i == 0) { /* a step scope and two nested ones per step; the loss read back */
            scope += 3;
            for (int st = 0; st < 32; st++)
                if (stream_free[st] > host_ns) host_ns = stream_free[st];
            host_ns += uniform(10000, 30000);
        }
        const kernel_kind_t *k = &kinds[seq[step_i]];
        /* the same Python code path before each launch of a step: its gap varies by 3 % */
        host_ns += gap[step_i] + uniform(-gap[step_i] / 33, gap[step_i] / 33);
        corr += uniform(1, 3);
        if (uniform(0, 2) == 0) ext += uniform(1, 4);
        int64_t start = host_ns + uniform(3000, 8000);
        if (start < stream_free[k->stream]) start = stream_free[k->stream] + uniform(1000, 3000);
        int64_t jitter = k->dur_ns / 200 + 300; /* 0.5 % and 0.3 us, as kernels on an H200 vary */
        int64_t dur = k->dur_ns + uniform(-jitter, jitter);
        stream_free[k->stream] = start + dur;
        int64_t v[GPUFL_KCOL_COUNT] = {[GPUFL_KCOL_START] = start,
                                       [GPUFL_KCOL_END] = start + dur,
                                       [GPUFL_KCOL_DEVICE] = 0,
                                       [GPUFL_KCOL_CONTEXT] = 1,
                                       [GPUFL_KCOL_STREAM] = k->stream,
                                       [GPUFL_KCOL_CORRELATION] = corr,
                                       [GPUFL_KCOL_NAME] = 1 + seq[step_i],
                                       [GPUFL_KCOL_GRID_X] = k->grid[0],
                                       [GPUFL_KCOL_GRID_Y] = k->grid[1],
                                       [GPUFL_KCOL_GRID_Z] = k->grid[2],
                                       [GPUFL_KCOL_BLOCK_X] = k->block[0],
                                       [GPUFL_KCOL_BLOCK_Y] = k->block[1],
                                       [GPUFL_KCOL_BLOCK_Z] = k->block[2],
                                       [GPUFL_KCOL_REGISTERS] = k->regs,
                                       [GPUFL_KCOL_STATIC_SMEM] = k->ssmem,
                                       [GPUFL_KCOL_DYNAMIC_SMEM] = k->dsmem,
                                       [GPUFL_KCOL_LOCAL] = 0,
                                       [GPUFL_KCOL_GRAPH_ID] = 0,
                                       [GPUFL_KCOL_GRAPH_NODE] = 0,
                                       [GPUFL_KCOL_DEMANGLED] = 1 + N_KERNELS + seq[step_i],
                                       [GPUFL_KCOL_SCOPE] = scope + (step_i < STEP_LEN / 2 ? 1 : 2),
                                       [GPUFL_KCOL_CONFIG] = 1 + seq[step_i],
                                       [GPUFL_KCOL_EXTERNAL_KIND] = 5,
                                       [GPUFL_KCOL_EXTERNAL_ID] = ext,
                                       [GPUFL_KCOL_LAUNCH] = host_ns,
                                       [GPUFL_KCOL_TID] = 48211,
                                       [GPUFL_KCOL_STACK] = 1 + step_i};
        if (k->grid_varies)
            v[GPUFL_KCOL_GRID_X] = k->grid[0] + 32 * uniform(0, 7); /* grid follows the batch */
        gpufl__batch_t *b[2] = {&plain, &compact};
        for (int f = 0; f < 2; f++) {
            gpufl__cell_t *row = gpufl__batch_row(b[f]);
            for (int c = 0; c < GPUFL_KCOL_COUNT; c++) row[c].i = v[c];
        }
        if (plain.rows == GPUFL_BATCH_MAX_ROWS || i == kernels - 1) {
            size_t plain_at = outs[0].len;
            for (int f = 0; f < 2; f++) {
                line.len = 0;
                double t0 = now_s();
                gpufl__wire_batch_line(&line, b[f], 0, b[f]->rows);
                encode_s[f] += now_s() - t0;
                append(&outs[f], line.data, line.len);
                b[f]->rows = 0;
            }
            ok &= same_rows(outs[0].data + plain_at, outs[0].len - plain_at, line.data, line.len);
        }
    }
    printf("kernels %ld, %d distinct, %d-row lines\n", kernels, N_KERNELS, GPUFL_BATCH_MAX_ROWS);
    printf("%-16s %10s %10s %10s\n", "format", "raw B/k", "gzip-1 B/k", "gzip-6 B/k");
    static const char *const names[2] = {"kernel v1", "kernel v2"};
    for (int f = 0; f < 2; f++)
        printf("%-16s %10.1f %10.2f %10.2f\n", names[f], (double)outs[f].len / (double)kernels,
               (double)gz_size(&outs[f], 1) / (double)kernels,
               (double)gz_size(&outs[f], 6) / (double)kernels);
    for (int f = 0; f < 2; f++) {
        long rows;
        double t = scan_s(&outs[f], &rows);
        ok &= rows == kernels;
        printf("%s: encode %.0f ns/kernel, scan (and decode) %.0f ns/kernel\n", names[f],
               encode_s[f] * 1e9 / (double)kernels, t * 1e9 / (double)kernels);
    }
    for (int f = 0; f < 2 && argc > 2; f++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/kernel-v%d.log", argv[2], f + 1);
        FILE *fp = fopen(path, "wb");
        if (!fp || fwrite(outs[f].data, 1, outs[f].len, fp) != outs[f].len || fclose(fp)) ok = 0;
    }
    printf("v2 / v1: raw %.3f, gzip-1 %.3f\n", (double)outs[1].len / (double)outs[0].len,
           (double)gz_size(&outs[1], 1) / (double)gz_size(&outs[0], 1));
    printf("\n");
    gpufl__buf_fini(&line);
    gpufl__batch_fini(&plain);
    gpufl__batch_fini(&compact);
    free(outs[0].data);
    free(outs[1].data);
    return ok ? 0 : 1;
}
