// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_trigger.c - fuzz target for the flight recorder's conditions
 * (flight_recorder_trigger, lib/core/flight_insight.c): any bytes are either
 * refused with GPUFL_EINVAL and a message, or give conditions within their
 * documented bounds whose written-back names parse again to the same thing.
 */
#include "fuzz_target.h"

#include "core/flight_recorder.h"

#include <gpufl/gpufl.h>

#include <string.h>

static void quiet_log(gpufl_log_level_t level, const char *message, void *user) {
    (void)level;
    (void)message;
    (void)user;
}

static const int64_t DAY_NS = 86400LL * 1000000000LL;

static void check_bounds(const gpufl__flight_conditions_t *c) {
    FUZZ_CHECK(c->n >= 0 && c->n <= GPUFL__FLIGHT_CONDITIONS_MAX);
    for (int i = 0; i < c->n; i++) {
        const gpufl__flight_condition_t *k = &c->v[i];
        FUZZ_CHECK(k->kind == GPUFL__CONDITION_GPU_IDLE || k->kind == GPUFL__CONDITION_SYNC);
        FUZZ_CHECK(k->for_ns > 0 && k->for_ns <= DAY_NS);
        if (k->kind == GPUFL__CONDITION_GPU_IDLE) FUZZ_CHECK(k->idle_pct >= 0 && k->idle_pct <= 99);
        FUZZ_CHECK(memchr(k->name, '\0', sizeof k->name) != NULL && k->name[0]);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gpufl_set_log_hook(quiet_log, NULL);
    char text[1024];
    if (size >= sizeof text) size = sizeof text - 1;
    memcpy(text, data, size);
    text[size] = '\0';

    gpufl__flight_conditions_t c;
    memset(&c, 0x5a, sizeof c);
    int rc = gpufl__flight_conditions_parse(text, &c);
    if (rc) {
        FUZZ_CHECK(rc == GPUFL_EINVAL);
        FUZZ_CHECK(gpufl_last_error()[0] != '\0');
        return 0;
    }
    check_bounds(&c);

    /* The names written back (what the snapshot's reason says) read as the same conditions. */
    char again[GPUFL__FLIGHT_CONDITIONS_MAX * 50] = "";
    for (int i = 0; i < c.n; i++) {
        if (i) strcat(again, ",");
        strcat(again, c.v[i].name);
    }
    gpufl__flight_conditions_t d;
    FUZZ_CHECK(gpufl__flight_conditions_parse(again, &d) == 0);
    FUZZ_CHECK(d.n == c.n);
    for (int i = 0; i < c.n; i++) {
        FUZZ_CHECK(d.v[i].kind == c.v[i].kind && d.v[i].for_ns == c.v[i].for_ns);
        FUZZ_CHECK(c.v[i].kind != GPUFL__CONDITION_GPU_IDLE || d.v[i].idle_pct == c.v[i].idle_pct);
        FUZZ_CHECK(strcmp(d.v[i].name, c.v[i].name) == 0);
    }
    return 0;
}
