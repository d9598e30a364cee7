// SPDX-License-Identifier: Apache-2.0
/*
 * api.c - /api/v1/gpus: the snapshot as JSON (jansson): the host's latest
 * row, and per device its identity, whether it was lost, its latest
 * readings by column (null where the device gave none) and its processes
 * (memory and who each belongs to; null where unknown). Without a GPU
 * backend the list is empty and gpu_why says why.
 */
#include "monitor.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

int mon_buf_put(mon_buf_t *out, const char *p, size_t n) {
    if (out->len + n + 1 > out->cap) {
        size_t cap = out->cap ? out->cap : 4096;
        while (cap < out->len + n + 1) cap *= 2;
        if (out->max && cap > out->max) cap = out->max;
        if (cap < out->len + n + 1) return -1;
        char *d = realloc(out->data, cap);
        if (!d) return -1;
        out->data = d;
        out->cap = cap;
    }
    memcpy(out->data + out->len, p, n);
    out->len += n;
    out->data[out->len] = '\0';
    return 0;
}

static json_t *row_object(const mon_value_t *cols, int n) {
    json_t *o = json_object();
    for (int i = 0; i < n; i++)
        json_object_set_new(o, cols[i].column,
                            cols[i].present ? json_real(cols[i].value) : json_null());
    return o;
}

static json_t *str_or_null(const char *s) { return *s ? json_string(s) : json_null(); }

static json_t *processes_array(const mon_device_t *d) {
    json_t *a = json_array();
    for (int i = 0; a && i < d->nprocesses && i < MON_MAX_PROCESSES; i++) {
        const mon_process_t *p = &d->processes[i];
        json_t *o = json_pack(
            "{s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "pid", p->pid, "used_bytes",
            p->used_bytes >= 0 ? json_integer(p->used_bytes) : json_null(), "sm_util_pct",
            p->sm_util_pct >= 0 ? json_integer(p->sm_util_pct) : json_null(), "mem_util_pct",
            p->mem_util_pct >= 0 ? json_integer(p->mem_util_pct) : json_null(), "comm",
            str_or_null(p->comm), "user", str_or_null(p->user), "container",
            str_or_null(p->container), "pod_uid", str_or_null(p->pod_uid), "slurm_job",
            str_or_null(p->slurm_job));
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *device_object(const mon_device_t *d) {
    json_t *o = json_pack("{s:i, s:s, s:s, s:s, s:b}", "index", d->index, "uuid", d->uuid,
                          "pci_bus_id", d->pci_bus_id, "model", d->model, "lost", d->lost);
    if (!o) return NULL;
    if (d->mig_instance >= 0) {
        json_object_set_new(o, "mig_instance", json_integer(d->mig_instance));
        json_object_set_new(o, "mig_profile", json_string(d->mig_profile));
    }
    json_object_set_new(o, "ts_ns", d->ncols ? json_integer(d->ts_ns) : json_null());
    json_object_set_new(o, "readings", row_object(d->cols, d->ncols));
    json_object_set_new(o, "processes", processes_array(d));
    return o;
}

int mon_render_gpus_json(mon_buf_t *out, const mon_snapshot_t *s) {
    json_t *gpus = json_array();
    for (int i = 0; i < s->ndevices; i++)
        json_array_append_new(gpus, device_object(&s->devices[i]));
    json_t *root = json_pack("{s:s, s:I, s:b, s:o, s:o}", "hostname", s->hostname, "ts_unix_ms",
                             (json_int_t)s->ts_unix_ms, "gpu_available", s->gpu_available, "host",
                             row_object(s->host, s->host_ncols), "gpus", gpus);
    if (!root) return -1;
    if (!s->gpu_available) json_object_set_new(root, "gpu_why", json_string(s->gpu_why));
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (!text) return -1;
    int rc = mon_buf_put(out, text, strlen(text));
    if (rc == 0) rc = mon_buf_put(out, "\n", 1);
    free(text);
    return rc;
}
