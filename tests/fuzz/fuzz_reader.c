// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_reader.c - fuzz target for the session-log reader, the session model
 * and the report: each input is cut into the files of one session directory,
 * which is loaded (with default caps and with tiny ones) and reported on.
 *
 * Input format: parts separated by FUZZ_SEPARATOR become, in order,
 * device.log, scope.log, system.log, scope.log.1, scope.log.2, system.log.1
 * (anything after the sixth separator stays in the last part). An empty part
 * means the file is absent, so the empty input is a directory with no logs.
 */
#include "fuzz_target.h"

#include "analysis/model.h"
#include "analysis/report.h"

#include <gpufl/gpufl.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_SEPARATOR "\n===FILE===\n"
#define FUZZ_MAX_INPUT ((size_t)256 << 10) /* bounds the work per input */

static const char *const part_names[] = {"device.log",  "scope.log",   "system.log",
                                         "scope.log.1", "scope.log.2", "system.log.1"};
enum { N_PARTS = sizeof part_names / sizeof part_names[0] };

static char session_dir[4096];
static FILE *dev_null;

static void quiet_log(gpufl_log_level_t level, const char *message, void *user) {
    (void)level;
    (void)message;
    (void)user;
}

static void part_path(char *buf, size_t size, int i) {
    snprintf(buf, size, "%s/%s", session_dir, part_names[i]);
}

static void remove_parts(void) {
    char path[4200];
    for (int i = 0; i < N_PARTS; i++) {
        part_path(path, sizeof path, i);
        unlink(path);
    }
}

static void cleanup(void) {
    remove_parts();
    rmdir(session_dir);
    if (dev_null) fclose(dev_null);
}

static void setup_once(void) {
    if (session_dir[0]) return;
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    snprintf(session_dir, sizeof session_dir, "%s/gpufl-fuzz-reader-XXXXXX", tmp);
    FUZZ_CHECK(mkdtemp(session_dir) != NULL);
    dev_null = fopen("/dev/null", "w");
    FUZZ_CHECK(dev_null != NULL);
    atexit(cleanup);
    gpufl_set_log_hook(quiet_log, NULL);
}

static void write_part(int i, const uint8_t *data, size_t size) {
    char path[4200];
    if (size == 0) return; /* absent */
    part_path(path, sizeof path, i);
    FILE *f = fopen(path, "wb");
    FUZZ_CHECK(f != NULL);
    FUZZ_CHECK(fwrite(data, 1, size, f) == size);
    FUZZ_CHECK(fclose(f) == 0);
}

static void write_session(const uint8_t *data, size_t size) {
    const size_t sep_len = sizeof FUZZ_SEPARATOR - 1;
    remove_parts();
    for (int i = 0; i < N_PARTS; i++) {
        const uint8_t *sep = i + 1 < N_PARTS ? memmem(data, size, FUZZ_SEPARATOR, sep_len) : NULL;
        size_t len = sep ? (size_t)(sep - data) : size;
        write_part(i, data, len);
        if (!sep) break;
        data = sep + sep_len;
        size -= len + sep_len;
    }
}

/* What model.h promises of every loaded model. */
static void check_model(const gpufl__model_t *m) {
    const gpufl__model_header_t *h = &m->header;
    FUZZ_CHECK(h->session_id && h->app_name && h->hostname && h->clock && h->gpufl_version);
    FUZZ_CHECK(m->n_scopes <= m->limits.max_scopes && m->n_samples <= m->limits.max_samples);
    FUZZ_CHECK(m->n_windows <= m->limits.max_windows && m->n_events <= m->limits.max_events);
    FUZZ_CHECK(m->n_warnings <= m->limits.max_warnings);
    size_t open = 0;
    for (size_t i = 0; i < m->n_scopes; i++) {
        const gpufl__model_scope_t *s = &m->scopes[i];
        FUZZ_CHECK(s->id > 0 && s->name && s->tag && s->path);
        FUZZ_CHECK(!s->open || s->end_ns == GPUFL_MODEL_UNKNOWN);
        const gpufl__model_scope_t *found = gpufl__model_scope_find(m, s->id);
        FUZZ_CHECK(found && found->id == s->id);
        open += s->open;
    }
    FUZZ_CHECK(open == m->n_open_scopes);
    /* Scope ends without a begin: named or not, both or neither. */
    FUZZ_CHECK(m->n_lost_scopes <= m->scope_ends_unmatched);
    for (size_t i = 0; i < m->n_lost_scopes; i++) {
        const gpufl__model_scope_t *s = &m->lost_scopes[i];
        FUZZ_CHECK(s->lost && !s->open && s->tag && !s->path == !s->name);
        FUZZ_CHECK(s->begin_ns == GPUFL_MODEL_UNKNOWN && !gpufl__model_scope_find(m, s->id));
    }
    /* Damaged lines: kept within the warnings cap, each one a corrupt line. */
    FUZZ_CHECK(m->n_damaged <= m->damaged_lines && m->n_damaged <= m->limits.max_warnings);
    FUZZ_CHECK(m->damaged_lines <= m->read.corrupt_lines);
    for (size_t i = 0; i < m->n_damaged; i++)
        FUZZ_CHECK(m->damaged[i].file && m->damaged[i].line > 0 && m->damaged[i].rows >= -1);
    for (size_t i = 0; i < m->n_windows; i++) FUZZ_CHECK(m->windows[i].name != NULL);
    for (size_t i = 0; i < m->n_events; i++) {
        const gpufl__model_event_t *e = &m->events[i];
        FUZZ_CHECK(e->level_name && e->code && e->message);
    }
    for (size_t i = 0; i < m->n_warnings; i++)
        FUZZ_CHECK(m->warnings[i].file && m->warnings[i].message);
    if (m->first_ts_ns != GPUFL_MODEL_UNKNOWN)
        FUZZ_CHECK(m->first_ts_ns >= 0 && m->first_ts_ns <= m->last_ts_ns);
    FUZZ_CHECK(m->read.records <= m->read.lines);
}

/* The report of one model, as bytes (free *out). Returns the report's rc. */
static int report_bytes(const gpufl__model_t *m, char **out, size_t *len) {
    FILE *f = open_memstream(out, len);
    FUZZ_CHECK(f != NULL);
    int rc = gpufl__report_write(m, f);
    FUZZ_CHECK(fclose(f) == 0);
    return rc;
}

static void load_and_report(const gpufl__model_limits_t *limits) {
    gpufl__model_t *m = (gpufl__model_t *)1;
    int rc = limits ? gpufl__model_load_limits(&m, session_dir, limits)
                    : gpufl__model_load(&m, session_dir);
    FUZZ_CHECK(rc <= 0);
    FUZZ_CHECK((rc == 0) == (m != NULL));
    if (rc) return;
    check_model(m);
    if (limits) {
        gpufl__report_write(m, dev_null);
    } else {
        /* Same logs, same bytes (report.h): also catches reads of
         * uninitialised memory that happen to differ between two runs. */
        char *a = NULL, *b = NULL;
        size_t a_len = 0, b_len = 0;
        int rc_a = report_bytes(m, &a, &a_len);
        int rc_b = report_bytes(m, &b, &b_len);
        FUZZ_CHECK(rc_a == rc_b);
        FUZZ_CHECK(a_len == b_len && memcmp(a, b, a_len) == 0);
        FUZZ_CHECK(rc_a != 0 || strncmp(a, "gpufl report: ", 14) == 0);
        free(a);
        free(b);
    }
    gpufl__model_destroy(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > FUZZ_MAX_INPUT) return 0;
    setup_once();
    write_session(data, size);

    load_and_report(NULL);
    /* Tiny caps reach the over-cap paths that small inputs never reach with
     * the defaults. */
    const gpufl__model_limits_t tiny = {.max_scopes = 8,
                                        .max_samples = 8,
                                        .max_windows = 4,
                                        .max_events = 4,
                                        .max_warnings = 5,
                                        .max_dict = 8,
                                        .max_string_bytes = 4096,
                                        .max_line_bytes = 1024};
    load_and_report(&tiny);
    return 0;
}
