// SPDX-License-Identifier: Apache-2.0
/*
 * flight_insight.c - the flight recorder's insight conditions
 * (flight_recorder_trigger): their grammar, and a sink that watches the rows
 * they read as the collector hands them out, so a condition costs a pointer
 * compare per batch of any other table and a few compares per row of its own.
 *
 * A condition that holds asks for a snapshot "insight:<condition>" through
 * the trigger thread (flight_recorder.c). One long idle stretch is one
 * snapshot: a device's stretch fires once and re-arms only when the device
 * is busy again; and no condition fires twice within the recorder's window,
 * the span one snapshot already covers.
 */
#include "core/flight_recorder.h"

#include "util/error.h"
#include "util/log.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OPTION  "flight_recorder_trigger"
#define DEVICES 64 /* gpu_sample rows of devices past it are not watched */

/* ---------------- the grammar ---------------- */

typedef struct cursor {
    const char *p;
} cursor_t;

static void skip_space(cursor_t *c) {
    while (isspace((unsigned char)*c->p)) c->p++;
}

/* Eats word (after spaces) when it comes next. */
static int eat(cursor_t *c, const char *word) {
    skip_space(c);
    size_t n = strlen(word);
    if (strncmp(c->p, word, n) != 0) return 0;
    c->p += n;
    return 1;
}

static int number(cursor_t *c, int64_t max, int64_t *out) {
    skip_space(c);
    if (!isdigit((unsigned char)*c->p)) return 0;
    int64_t v = 0;
    while (isdigit((unsigned char)*c->p)) {
        v = v * 10 + (*c->p++ - '0');
        if (v > max) return 0;
    }
    *out = v;
    return 1;
}

/* <integer>ms or <integer>s, above 0 and at most a day. */
static int duration(cursor_t *c, int64_t *ns) {
    int64_t v;
    if (!number(c, 86400000, &v) || v == 0) return 0;
    if (strncmp(c->p, "ms", 2) == 0) {
        c->p += 2;
        *ns = v * 1000000;
        return 1;
    }
    if (*c->p == 's' && v <= 86400) {
        c->p++;
        *ns = v * 1000000000;
        return 1;
    }
    return 0;
}

static void duration_text(char *out, size_t size, int64_t ns) {
    if (ns % 1000000000 == 0)
        snprintf(out, size, "%llds", (long long)(ns / 1000000000));
    else
        snprintf(out, size, "%lldms", (long long)(ns / 1000000));
}

static int syntax_error(const char *text, const char *at, const char *expected) {
    return gpufl__set_error(GPUFL_EINVAL,
                            OPTION " '%s': at '%s': expected %s (conditions, comma-separated: "
                                   "gpu_idle>P%%forD as gpu_idle>90%%for30s, sync>D as "
                                   "sync>50ms; D in ms or s)",
                            text, *at ? at : "the end", expected);
}

/* One condition at c into k; 0 or GPUFL_EINVAL. */
static int condition(const char *text, cursor_t *c, gpufl__flight_condition_t *k) {
    char d[24];
    int64_t pct;
    memset(k, 0, sizeof *k);
    if (eat(c, "gpu_idle")) {
        k->kind = GPUFL__CONDITION_GPU_IDLE;
        if (!eat(c, ">")) return syntax_error(text, c->p, "'>' after gpu_idle");
        if (!number(c, 99, &pct) || !eat(c, "%"))
            return syntax_error(text, c->p, "a percentage from 0% to 99%");
        if (!eat(c, "for")) return syntax_error(text, c->p, "'for' and a duration");
        if (!duration(c, &k->for_ns))
            return syntax_error(text, c->p, "a duration as 30s or 500ms (up to a day)");
        k->idle_pct = (int)pct;
        duration_text(d, sizeof d, k->for_ns);
        snprintf(k->name, sizeof k->name, "gpu_idle>%d%%for%s", k->idle_pct, d);
        return 0;
    }
    if (eat(c, "sync")) {
        k->kind = GPUFL__CONDITION_SYNC;
        if (!eat(c, ">")) return syntax_error(text, c->p, "'>' after sync");
        if (!duration(c, &k->for_ns))
            return syntax_error(text, c->p, "a duration as 50ms or 2s (up to a day)");
        duration_text(d, sizeof d, k->for_ns);
        snprintf(k->name, sizeof k->name, "sync>%s", d);
        return 0;
    }
    return syntax_error(text, c->p, "a condition: gpu_idle or sync");
}

int gpufl__flight_conditions_parse(const char *text, gpufl__flight_conditions_t *out) {
    gpufl__flight_conditions_t all;
    all.n = 0;
    cursor_t c = {text ? text : ""};
    skip_space(&c);
    while (*c.p) {
        if (all.n == GPUFL__FLIGHT_CONDITIONS_MAX)
            return gpufl__set_error(GPUFL_EINVAL, OPTION " '%s': more than %d conditions", text,
                                    GPUFL__FLIGHT_CONDITIONS_MAX);
        int rc = condition(text, &c, &all.v[all.n++]);
        if (rc) return rc;
        skip_space(&c);
        if (!*c.p) break;
        if (!eat(&c, ",")) return syntax_error(text, c.p, "',' or the end");
        skip_space(&c);
        if (!*c.p) return syntax_error(text, c.p, "a condition after ','");
    }
    if (out) *out = all;
    return 0;
}

/* ---------------- the watch ---------------- */

typedef struct stretch {
    int64_t since_ns; /* the first idle sample of the stretch; -1: busy */
    int fired;        /* this stretch took its snapshot (or was held off) */
} stretch_t;

struct gpufl__flight_watch {
    gpufl__flight_conditions_t c;
    int64_t hold_off_ns;
    int64_t last_fired_ns[GPUFL__FLIGHT_CONDITIONS_MAX]; /* row time; INT64_MIN: never */
    stretch_t idle[GPUFL__FLIGHT_CONDITIONS_MAX][DEVICES];
};

int gpufl__flight_watch_create(gpufl__flight_watch_t **out, const gpufl__flight_conditions_t *c,
                               int window_s) {
    gpufl__flight_watch_t *w = calloc(1, sizeof *w);
    if (!w) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the flight recorder's watch");
    w->c = *c;
    w->hold_off_ns = (int64_t)window_s * 1000000000;
    for (int i = 0; i < GPUFL__FLIGHT_CONDITIONS_MAX; i++) {
        w->last_fired_ns[i] = INT64_MIN;
        for (int d = 0; d < DEVICES; d++) w->idle[i][d].since_ns = -1;
    }
    *out = w;
    return 0;
}

void gpufl__flight_watch_destroy(gpufl__flight_watch_t *w) { free(w); }

/* Condition i holds at ts_ns: a snapshot unless one fired within the hold-off. */
static void fire(gpufl__flight_watch_t *w, int i, int64_t ts_ns) {
    char why[64];
    if (w->last_fired_ns[i] != INT64_MIN && ts_ns - w->last_fired_ns[i] < w->hold_off_ns) {
        gpufl__debug("flight recorder: insight %s held off (one fired %lld ms before)",
                     w->c.v[i].name, (long long)((ts_ns - w->last_fired_ns[i]) / 1000000));
        return;
    }
    w->last_fired_ns[i] = ts_ns;
    snprintf(why, sizeof why, "insight:%s", w->c.v[i].name);
    gpufl__flight_request(why);
}

static void watch_idle(gpufl__flight_watch_t *w, int i, const gpufl__batch_t *b) {
    const gpufl__flight_condition_t *k = &w->c.v[i];
    for (size_t r = 0; r < b->rows; r++) {
        const gpufl__cell_t *row = gpufl__batch_at(b, r);
        int64_t ts = row[0].i, device = row[1].i, util = row[2].i; /* gpu_sample's columns */
        if (device < 0 || device >= DEVICES || util < 0) continue; /* unknown: no verdict */
        stretch_t *s = &w->idle[i][device];
        if (100 - util <= k->idle_pct) { /* busy: the stretch ends, the next may fire */
            s->since_ns = -1;
            s->fired = 0;
            continue;
        }
        if (s->since_ns < 0) s->since_ns = ts;
        if (!s->fired && ts - s->since_ns >= k->for_ns) {
            s->fired = 1;
            fire(w, i, ts);
        }
    }
}

static void watch_sync(gpufl__flight_watch_t *w, int i, const gpufl__batch_t *b) {
    for (size_t r = 0; r < b->rows; r++) {
        const gpufl__cell_t *row = gpufl__batch_at(b, r);
        if (row[1].i - row[0].i > w->c.v[i].for_ns) fire(w, i, row[1].i); /* end - start */
    }
}

static int watch_batch(void *self, enum gpufl__file_id channel, const gpufl__batch_t *b,
                       const gpufl__intern_t *dict) {
    (void)channel, (void)dict;
    gpufl__flight_watch_t *w = self;
    for (int i = 0; i < w->c.n; i++) {
        if (w->c.v[i].kind == GPUFL__CONDITION_GPU_IDLE && b->table == &gpufl__wire_gpu_sample)
            watch_idle(w, i, b);
        else if (w->c.v[i].kind == GPUFL__CONDITION_SYNC && b->table == &gpufl__wire_sync)
            watch_sync(w, i, b);
    }
    return 0;
}

const gpufl__sink_ops_t gpufl__flight_watch_ops = {
    .name = "flight_watch",
    .batch = watch_batch,
};
