// SPDX-License-Identifier: Apache-2.0
/*
 * wire_session.h - the records that describe a session rather than what
 * happens in it (the options it resolved, what runs and why not), as typed
 * structs; wire_session.c encodes them (docs/log-format.md).
 */
#ifndef GPUFL_CORE_WIRE_SESSION_H
#define GPUFL_CORE_WIRE_SESSION_H

#include "core/wire.h"

/* One resolved option: its value (a string, or with str NULL an integer)
 * and where it came from. */
typedef struct gpufl__wire_option {
    const char *name;
    const char *str;
    int64_t num;
    const char *from;
} gpufl__wire_option_t;
void gpufl__wire_options(gpufl__line_t *l, const gpufl__wire_option_t *v, size_t n);

/* One entry of the capability record's "features": what runs and, when it
 * does not, why (NULL for no reason). */
typedef struct gpufl__feature {
    const char *name;
    int on;
    const char *why;
} gpufl__feature_t;

typedef struct gpufl__wire_capabilities {
    const char *backend_requested, *backend;
    const char *engine_requested, *engine;
    const gpufl__feature_t *features;
    size_t nfeatures;
} gpufl__wire_capabilities_t;
void gpufl__wire_capabilities(gpufl__line_t *l, const gpufl__wire_capabilities_t *c);

#endif
