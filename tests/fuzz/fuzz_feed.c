// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_feed.c - fuzz target for feeding a session's lines to the read API
 * (gpufl_analysis_feed): chunks of any size, for any file, interleaved in
 * any way, with reports taken between them. Checks that feeding the same
 * bytes of each file whole, file after file, gives the same JSON report.
 *
 * Input format: byte 0 picks the options (bit 0: GPUFL_ANALYSIS_IN_ORDER,
 * bit 1: lines capped at 256 bytes); then chunks, each a control byte
 * (bits 0-1: device, scope, system, or 3 for the NULL channel; bit 2: take
 * a report after it; bit 3: end that file after it), a 2-byte little-endian
 * length, and that many bytes (fewer at the input's end).
 */
#include "fuzz_target.h"

#include <gpufl/gpufl_analysis.h>

#include <string.h>

static const char *const channels[4] = {"device", "scope", "system", NULL};

static void quiet_log(gpufl_log_level_t level, const char *message, void *user) {
    (void)level;
    (void)message;
    (void)user;
}

static gpufl_analysis_t *create(unsigned flags, int small_lines) {
    gpufl_analysis_options_t o;
    gpufl_analysis_options_init(&o);
    o.flags = flags;
    o.max_line_bytes = small_lines ? 256 : 0;
    gpufl_analysis_t *a = NULL;
    FUZZ_CHECK(gpufl_analysis_create(&a, &o) == 0 && a);
    return a;
}

/* The JSON report, copied; NULL when the handle has none (in order, not ended). */
static char *json_report(gpufl_analysis_t *a) {
    gpufl_report_options_t o;
    gpufl_report_options_init(&o);
    o.format = "json";
    const char *text = NULL;
    size_t len = 0;
    if (gpufl_analysis_report(a, &o, &text, &len) != 0) return NULL;
    FUZZ_CHECK(text && strlen(text) == len);
    return strdup(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gpufl_set_log_hook(quiet_log, NULL);
    if (size < 1 || size > ((size_t)256 << 10)) return 0;
    unsigned flags = data[0] & 1 ? GPUFL_ANALYSIS_IN_ORDER : 0;
    int small = (data[0] >> 1) & 1;
    gpufl_analysis_t *a = create(flags, small);
    /* What each named file received in full, for the second handle. */
    char *whole[3] = {NULL, NULL, NULL};
    size_t whole_len[3] = {0, 0, 0};
    int named_only = 1, failed = 0;
    size_t at = 1;
    while (at + 3 <= size) {
        unsigned ctl = data[at];
        size_t len = (size_t)data[at + 1] | (size_t)data[at + 2] << 8;
        at += 3;
        if (len > size - at) len = size - at;
        int ch = (int)(ctl & 3);
        int rc = gpufl_analysis_feed(a, channels[ch], (const char *)data + at, len);
        FUZZ_CHECK(rc == 0 || rc == GPUFL_EINVAL || rc == GPUFL_EFORMAT || rc == GPUFL_ENOMEM);
        if (rc) failed = 1;
        if (ch == 3) named_only = 0;
        if (ch < 3 && rc == 0) {
            whole[ch] = realloc(whole[ch], whole_len[ch] + len + 1);
            FUZZ_CHECK(whole[ch] != NULL);
            memcpy(whole[ch] + whole_len[ch], data + at, len);
            whole_len[ch] += len;
        }
        at += len;
        if (ctl & 4) free(json_report(a));
        if (ctl & 8) {
            rc = gpufl_analysis_feed_end(a, channels[ch]);
            FUZZ_CHECK(rc == 0 || rc == GPUFL_EINVAL);
            if (ch == 3) failed = 1; /* the session ended early: later feeds fail */
        }
    }
    int rc = gpufl_analysis_feed_end(a, NULL);
    FUZZ_CHECK(rc == 0 || rc == GPUFL_EINVAL);
    char *got = json_report(a);
    FUZZ_CHECK(got != NULL);
    /* Any interleaving and chunking of the same bytes gives the same report. */
    if (!flags && named_only && !failed) {
        gpufl_analysis_t *b = create(0, small);
        for (int i = 0; i < 3; i++)
            if (whole_len[i])
                FUZZ_CHECK(gpufl_analysis_feed(b, channels[i], whole[i], whole_len[i]) == 0);
        FUZZ_CHECK(gpufl_analysis_feed_end(b, NULL) == 0);
        char *want = json_report(b);
        FUZZ_CHECK(want && strcmp(got, want) == 0);
        free(want);
        gpufl_analysis_close(b);
    }
    free(got);
    for (int i = 0; i < 3; i++) free(whole[i]);
    gpufl_analysis_close(a);
    return 0;
}
