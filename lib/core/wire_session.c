// SPDX-License-Identifier: Apache-2.0
/*
 * wire_session.c - the encoders of the records that describe a session
 * (wire_session.h): written once near its start, kept by the collector and
 * given again to a sink attached later (sink.h).
 */
#include "core/wire_session.h"

#include <string.h>

void gpufl__wire_options(gpufl__line_t *l, const gpufl__wire_option_t *v, size_t n) {
    gpufl_buf_t *b = gpufl__line_begin_describing(l, "options");
    for (size_t i = 0; i < n; i++) {
        gpufl__buf_key(b, v[i].name);
        gpufl__buf_puts(b, "{\"value\":");
        if (v[i].str)
            gpufl__buf_put_str(b, v[i].str, strlen(v[i].str));
        else
            gpufl__buf_put_i64(b, v[i].num);
        gpufl__buf_kv_str(b, "from", v[i].from);
        gpufl__buf_putc(b, '}');
    }
    gpufl__line_end(l);
}

void gpufl__wire_capabilities(gpufl__line_t *l, const gpufl__wire_capabilities_t *c) {
    gpufl_buf_t *b = gpufl__line_begin_describing(l, "capabilities");
    gpufl__buf_kv_str(b, "backend_requested", c->backend_requested);
    gpufl__buf_kv_str(b, "backend", c->backend);
    gpufl__buf_kv_str(b, "engine_requested", c->engine_requested);
    gpufl__buf_kv_str(b, "engine", c->engine);
    gpufl__buf_key(b, "features");
    gpufl__buf_putc(b, '{');
    for (size_t i = 0; i < c->nfeatures; i++) {
        const gpufl__feature_t *f = &c->features[i];
        gpufl__buf_key(b, f->name);
        gpufl__buf_puts(b, f->on ? "{\"on\":true" : "{\"on\":false");
        if (f->why) gpufl__buf_kv_str(b, "why", f->why);
        gpufl__buf_putc(b, '}');
    }
    gpufl__buf_putc(b, '}');
    gpufl__line_end(l);
}
