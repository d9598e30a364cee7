// SPDX-License-Identifier: Apache-2.0
/*
 * probe.c - gpufl_probe_create(): what the machine gives each backend of the
 * table (core/backend.h), asked of the backends themselves, so `gpufl info`
 * and a session's capability record come from the same loaders and reasons.
 * The probe holds copies of every string; the backends keep nothing.
 */
#include "core/backend.h"
#include "util/error.h"

#include <stdlib.h>
#include <string.h>

#define PROBE_ENTRIES_MAX 32 /* capability entries of all backends */
#define PROBE_DEVICES_MAX 64 /* devices listed */

struct gpufl_probe {
    gpufl_capability_t entries[PROBE_ENTRIES_MAX];
    size_t n_entries;
    gpufl_device_info_t devices[PROBE_DEVICES_MAX];
    size_t n_devices;
    int failed; /* out of memory copying a string */
};

/* A copy of s (NULL stays NULL); sets p->failed when it cannot. */
static const char *copy(gpufl_probe_t *p, const char *s) {
    if (!s) return NULL;
    char *c = strdup(s);
    if (!c) p->failed = 1;
    return c;
}

void gpufl__probe_add(gpufl_probe_t *p, const char *feature, int on, const char *reason,
                      const char *detail) {
    if (p->n_entries == PROBE_ENTRIES_MAX) return;
    gpufl_capability_t *e = &p->entries[p->n_entries++];
    e->size = sizeof *e;
    e->feature = copy(p, feature);
    e->on = on != 0;
    e->reason = copy(p, on || reason ? reason : "unknown reason");
    e->detail = copy(p, detail);
}

void gpufl__probe_add_device(gpufl_probe_t *p, const gpufl_device_info_t *device) {
    if (p->n_devices == PROBE_DEVICES_MAX) return;
    gpufl_device_info_t *d = &p->devices[p->n_devices++];
    *d = *device;
    d->size = sizeof *d;
    d->name = copy(p, device->name ? device->name : "");
}

int gpufl_probe_create(gpufl_probe_t **out) {
    if (!out) return gpufl__set_error(GPUFL_EINVAL, "probe: out is NULL");
    *out = NULL;
    gpufl_probe_t *p = calloc(1, sizeof *p);
    if (!p) return gpufl__set_error(GPUFL_ENOMEM, "out of memory probing the machine");
    for (int i = 0; gpufl__backends[i]; i++)
        if (gpufl__backends[i]->probe) gpufl__backends[i]->probe(p);
    /* No backend answered for the engines: the host sources still run. */
    if (!gpufl_probe_find(p, gpufl_engine_name(GPUFL_ENGINE_MONITOR)))
        gpufl__probe_add(p, gpufl_engine_name(GPUFL_ENGINE_MONITOR), 1,
                         "host metrics only (no GPU backend)", NULL);
    if (p->failed) {
        gpufl_probe_destroy(p);
        return gpufl__set_error(GPUFL_ENOMEM, "out of memory probing the machine");
    }
    *out = p;
    return 0;
}

const gpufl_capability_t *gpufl_probe_capability(const gpufl_probe_t *probe, size_t index) {
    return probe && index < probe->n_entries ? &probe->entries[index] : NULL;
}

const gpufl_capability_t *gpufl_probe_find(const gpufl_probe_t *probe, const char *feature) {
    for (size_t i = 0; probe && feature && i < probe->n_entries; i++)
        if (probe->entries[i].feature && strcmp(probe->entries[i].feature, feature) == 0)
            return &probe->entries[i];
    return NULL;
}

const gpufl_device_info_t *gpufl_probe_device(const gpufl_probe_t *probe, size_t index) {
    return probe && index < probe->n_devices ? &probe->devices[index] : NULL;
}

void gpufl_probe_destroy(gpufl_probe_t *probe) {
    if (!probe) return;
    for (size_t i = 0; i < probe->n_entries; i++) {
        free((char *)probe->entries[i].feature);
        free((char *)probe->entries[i].reason);
        free((char *)probe->entries[i].detail);
    }
    for (size_t i = 0; i < probe->n_devices; i++) free((char *)probe->devices[i].name);
    free(probe);
}
