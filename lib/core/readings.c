// SPDX-License-Identifier: Apache-2.0
/*
 * readings.c - the public latest-value readings (gpufl_readings_*, gpufl.h):
 * a sink that keeps rows in the gauge sink (seqlock: the collector never
 * waits) and, from the few records that describe the session (capabilities,
 * gpu_info, gpu_legend) and the gpu_lost events, who each device is; from
 * gpu_processes and process_info, which processes each device runs; from
 * xid records, each device's XID errors counted per code.
 *
 * Those records are rare, so they are parsed (jansson) and kept under one
 * mutex that rows never take. The sink belongs to the session it is attached
 * to until that session closes it: destroy before then only marks it, and
 * the close frees it, so the fan-out never holds a freed pointer.
 */
#include "core/session.h"
#include "core/sink.h"

#include "util/error.h"

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEVICES_MAX    GPUFL_GAUGE_INSTANCES_MAX
#define NAME_MAX_BYTES 64
#define PROCS_MAX      GPUFL_READINGS_MAX_PROCESSES
/* process_info records remembered, newest replacing oldest. Each is needed
 * only until the gpu_processes record that follows it: after that its
 * device's list holds a copy, and a later list finds it there. */
#define INFOS_MAX 256

/* A device's latest process list. */
typedef struct proc_list {
    int index; /* the device; -1: slot unused */
    int n;
    gpufl_readings_process_t procs[PROCS_MAX];
} proc_list_t;

/* A device's XID errors, counted per code. */
typedef struct xid_list {
    int index; /* the device; -1: slot unused */
    int n;
    gpufl_readings_xid_t codes[GPUFL_READINGS_MAX_XIDS];
} xid_list_t;

struct gpufl_readings {
    gpufl__gauge_sink_t *gauges;
    int64_t epoch_ns;     /* the session's: rows' ts_ns are offsets from it */
    pthread_mutex_t lock; /* what follows */
    int closed, abandoned;
    size_t ndevices;
    gpufl_readings_device_t devices[DEVICES_MAX];
    char reasons[64][NAME_MAX_BYTES]; /* "" : no name */
    int have_caps, gpu_on;
    char gpu_why[256];
    proc_list_t lists[DEVICES_MAX];
    gpufl_readings_process_t infos[INFOS_MAX]; /* ring; used_bytes unused */
    size_t ninfos;                             /* ever taken: next slot is ninfos % INFOS_MAX */
    xid_list_t xids[DEVICES_MAX];
};

static void copy_str(char *dst, size_t size, json_t *v) {
    snprintf(dst, size, "%s", json_is_string(v) ? json_string_value(v) : "");
}

static gpufl_readings_device_t *device_slot(gpufl_readings_t *r, int index) {
    for (size_t i = 0; i < r->ndevices; i++)
        if (r->devices[i].index == index) return &r->devices[i];
    if (r->ndevices == DEVICES_MAX) return NULL;
    gpufl_readings_device_t *d = &r->devices[r->ndevices++];
    memset(d, 0, sizeof *d);
    d->size = sizeof *d;
    d->index = index;
    return d;
}

/* A MIG device's name ends in "MIG <profile>" (NVML's names). */
static void mig_profile_of(char *dst, size_t size, const char *name, int mig_index) {
    const char *p = mig_index >= 0 ? strstr(name, "MIG ") : NULL;
    snprintf(dst, size, "%s", p ? p + 4 : "");
}

static void take_gpu_info(gpufl_readings_t *r, json_t *o) {
    json_t *mig = json_object_get(o, "mig_index");
    gpufl_readings_device_t *d =
        device_slot(r, (int)json_integer_value(json_object_get(o, "device")));
    if (!d) return;
    d->mig_index = json_is_integer(mig) ? (int)json_integer_value(mig) : -1;
    copy_str(d->uuid, sizeof d->uuid, json_object_get(o, "uuid"));
    copy_str(d->pci_bus_id, sizeof d->pci_bus_id, json_object_get(o, "pci_bus_id"));
    copy_str(d->name, sizeof d->name, json_object_get(o, "name"));
    mig_profile_of(d->mig_profile, sizeof d->mig_profile, d->name, d->mig_index);
}

static void take_legend(gpufl_readings_t *r, json_t *o) {
    const char *key;
    json_t *v;
    json_object_foreach(json_object_get(o, "throttle_reasons"), key, v) {
        int bit = atoi(key);
        if (bit >= 0 && bit < 64) copy_str(r->reasons[bit], NAME_MAX_BYTES, v);
    }
}

/* The GPU side runs when a backend other than None does; else the first
 * feature that is off with a reason says why (the device library's). */
static void take_capabilities(gpufl_readings_t *r, json_t *o) {
    const char *backend = json_string_value(json_object_get(o, "backend"));
    const char *key;
    json_t *f;
    r->have_caps = 1;
    r->gpu_on = backend && strcmp(backend, "None") != 0;
    snprintf(r->gpu_why, sizeof r->gpu_why, "%s", r->gpu_on ? "" : "no GPU backend runs");
    if (r->gpu_on) return;
    json_object_foreach(json_object_get(o, "features"), key, f) {
        const char *why = json_string_value(json_object_get(f, "why"));
        if (json_is_false(json_object_get(f, "on")) && why && strcmp(key, "host_metrics") != 0) {
            snprintf(r->gpu_why, sizeof r->gpu_why, "%s: %s", key, why);
            return;
        }
    }
}

/* gpu_lost events name the device as "GPU <index> (...)" (gpu_sampler.c). */
static void take_event(gpufl_readings_t *r, json_t *o) {
    const char *code = json_string_value(json_object_get(o, "code"));
    const char *msg = json_string_value(json_object_get(o, "message"));
    int index;
    if (!code || strcmp(code, "gpu_lost") != 0 || !msg || sscanf(msg, "GPU %d", &index) != 1)
        return;
    gpufl_readings_device_t *d = device_slot(r, index);
    if (d) d->lost = 1;
}

static void take_process_info(gpufl_readings_t *r, json_t *o) {
    static const struct {
        const char *key;
        size_t offset, size;
    } strs[] = {
#define STR(f)                                                                                     \
    {#f, offsetof(gpufl_readings_process_t, f), sizeof(((gpufl_readings_process_t *)0)->f)}
        STR(comm),    STR(user),         STR(container_id),    STR(container_runtime),
        STR(pod_uid), STR(slurm_job_id), STR(slurm_job_source)
#undef STR
    };
    json_t *pid = json_object_get(o, "pid"), *start = json_object_get(o, "start_ticks");
    json_t *uid = json_object_get(o, "uid");
    if (!json_is_integer(pid) || json_integer_value(pid) <= 0) return;
    gpufl_readings_process_t *p = &r->infos[r->ninfos++ % INFOS_MAX];
    memset(p, 0, sizeof *p);
    p->size = sizeof *p;
    p->pid = (int)json_integer_value(pid);
    p->start_ticks = json_is_integer(start) ? (uint64_t)json_integer_value(start) : 0;
    p->uid = json_is_integer(uid) ? json_integer_value(uid) : -1;
    p->used_bytes = -1;
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        copy_str((char *)p + strs[i].offset, strs[i].size, json_object_get(o, strs[i].key));
}

/* Who pid is: the newest process_info of it, else the copy a device's list
 * kept (its record has left the ring); NULL when the session never
 * described it. */
static const gpufl_readings_process_t *find_process(const gpufl_readings_t *r, int pid) {
    size_t kept = r->ninfos < INFOS_MAX ? r->ninfos : INFOS_MAX;
    for (size_t k = 1; k <= kept; k++) {
        const gpufl_readings_process_t *p = &r->infos[(r->ninfos - k) % INFOS_MAX];
        if (p->pid == pid) return p;
    }
    for (int d = 0; d < DEVICES_MAX; d++)
        for (int i = 0; r->lists[d].index >= 0 && i < r->lists[d].n; i++)
            if (r->lists[d].procs[i].pid == pid) return &r->lists[d].procs[i];
    return NULL;
}

static proc_list_t *list_slot(gpufl_readings_t *r, int index) {
    proc_list_t *free_slot = NULL;
    for (int d = 0; d < DEVICES_MAX; d++) {
        if (r->lists[d].index == index) return &r->lists[d];
        if (r->lists[d].index < 0 && !free_slot) free_slot = &r->lists[d];
    }
    if (free_slot) free_slot->index = index;
    return free_slot;
}

static void take_processes(gpufl_readings_t *r, json_t *o) {
    json_t *pids = json_object_get(o, "pid"), *used = json_object_get(o, "used_bytes");
    json_t *sm = json_object_get(o, "sm_util_pct"), *mem = json_object_get(o, "mem_util_pct");
    proc_list_t *list = list_slot(r, (int)json_integer_value(json_object_get(o, "device")));
    gpufl_readings_process_t procs[PROCS_MAX];
    int n = 0;
    if (!list || !json_is_array(pids)) return;
    for (size_t i = 0; i < json_array_size(pids) && n < PROCS_MAX; i++) {
        json_t *u = json_array_get(used, i);
        const gpufl_readings_process_t *who =
            find_process(r, (int)json_integer_value(json_array_get(pids, i)));
        if (!who) continue; /* never described: gone, or not ours to see */
        json_t *s = json_array_get(sm, i), *m = json_array_get(mem, i);
        procs[n] = *who;
        procs[n].used_bytes = json_is_integer(u) ? json_integer_value(u) : -1;
        procs[n].sm_util_pct = json_is_integer(s) ? (int)json_integer_value(s) : -1;
        procs[n++].mem_util_pct = json_is_integer(m) ? (int)json_integer_value(m) : -1;
    }
    memcpy(list->procs, procs, (size_t)n * sizeof procs[0]);
    list->n = n;
}

static xid_list_t *xid_slot(gpufl_readings_t *r, int index) {
    xid_list_t *free_slot = NULL;
    for (int d = 0; d < DEVICES_MAX; d++) {
        if (r->xids[d].index == index) return &r->xids[d];
        if (r->xids[d].index < 0 && !free_slot) free_slot = &r->xids[d];
    }
    if (free_slot) free_slot->index = index;
    return free_slot;
}

static void take_xid(gpufl_readings_t *r, json_t *o) {
    json_t *code = json_object_get(o, "code"), *device = json_object_get(o, "device");
    if (!json_is_integer(code) || json_integer_value(code) < 0 || !json_is_integer(device)) return;
    xid_list_t *list = xid_slot(r, (int)json_integer_value(device));
    if (!list) return;
    uint64_t c = (uint64_t)json_integer_value(code);
    int i = 0;
    while (i < list->n && list->codes[i].code != c) i++;
    if (i == list->n) {
        if (list->n == GPUFL_READINGS_MAX_XIDS) return; /* no room for another code */
        list->codes[list->n++] = (gpufl_readings_xid_t){.size = sizeof list->codes[0], .code = c};
    }
    list->codes[i].count++;
    list->codes[i].last_ts_ns = json_integer_value(json_object_get(o, "ts_ns"));
}

static int readings_record(void *self, enum gpufl__file_id channel, const gpufl__line_t *line,
                           const gpufl__intern_t *dict) {
    static const struct {
        const char *type;
        void (*take)(gpufl_readings_t *, json_t *);
    } takers[] = {{"gpu_info", take_gpu_info},
                  {"gpu_legend", take_legend},
                  {"capabilities", take_capabilities},
                  {"event", take_event},
                  {"process_info", take_process_info},
                  {"gpu_processes", take_processes},
                  {"xid", take_xid}};
    gpufl_readings_t *r = self;
    (void)channel;
    (void)dict;
    for (size_t i = 0; i < sizeof takers / sizeof takers[0]; i++) {
        if (!line->type || strcmp(line->type, takers[i].type) != 0) continue;
        json_t *o = json_loadb(line->buf.data, line->buf.len, 0, NULL);
        if (!o) return GPUFL_EFORMAT;
        pthread_mutex_lock(&r->lock);
        takers[i].take(r, o);
        pthread_mutex_unlock(&r->lock);
        json_decref(o);
        return 0;
    }
    return 0;
}

static int readings_batch(void *self, enum gpufl__file_id channel, const gpufl__batch_t *b,
                          const gpufl__intern_t *dict) {
    gpufl_readings_t *r = self;
    return gpufl__gauge_sink_ops.batch(r->gauges, channel, b, dict);
}

static void readings_free(gpufl_readings_t *r) {
    gpufl__gauge_sink_destroy(r->gauges);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

static void readings_close(void *self) {
    gpufl_readings_t *r = self;
    pthread_mutex_lock(&r->lock);
    int free_now = r->abandoned;
    r->closed = 1;
    pthread_mutex_unlock(&r->lock);
    if (free_now) readings_free(r);
}

static const gpufl__sink_ops_t readings_ops = {
    .name = "readings",
    .record = readings_record,
    .batch = readings_batch,
    .close = readings_close,
};

int gpufl_readings_create(gpufl_readings_t **out) {
    gpufl__session_ident_t ident;
    if (!out) return gpufl__set_error(GPUFL_EINVAL, "readings: out is NULL");
    *out = NULL;
    gpufl_readings_t *r = calloc(1, sizeof *r);
    if (!r) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the readings");
    pthread_mutex_init(&r->lock, NULL);
    for (int d = 0; d < DEVICES_MAX; d++) r->lists[d].index = r->xids[d].index = -1;
    snprintf(r->gpu_why, sizeof r->gpu_why, "no capability record yet");
    int rc = gpufl__gauge_sink_create(&r->gauges);
    if (rc) goto free_readings;
    if ((rc = gpufl__session_attach_sink(&readings_ops, r, &ident))) goto free_readings;
    r->epoch_ns = ident.epoch_ns;
    *out = r;
    return 0;
free_readings:
    readings_free(r);
    return rc;
}

void gpufl_readings_destroy(gpufl_readings_t *r) {
    if (!r) return;
    pthread_mutex_lock(&r->lock);
    int free_now = r->closed;
    r->abandoned = 1;
    pthread_mutex_unlock(&r->lock);
    if (free_now) readings_free(r);
}

/* The row of table's instance, every column but the time and the key. */
static int read_row(gpufl_readings_row_t *out, gpufl_readings_t *r,
                    const gpufl__wire_table_t *table, int instance) {
    gpufl__cell_t cells[GPUFL_BATCH_MAX_COLS];
    if (!out || !r || out->size < sizeof *out)
        return gpufl__set_error(GPUFL_EINVAL, "readings: NULL argument or row size too small");
    int rc = gpufl__gauge_sink_read(r->gauges, table, instance, cells, &out->updates);
    if (rc) return rc;
    out->ncolumns = 0;
    out->ts_ns = r->epoch_ns + cells[0].i;
    for (int c = 1; c < table->ncols && out->ncolumns < GPUFL_READINGS_MAX_COLUMNS; c++) {
        const gpufl__col_def_t *col = &table->cols[c];
        int n = out->ncolumns;
        if (c == table->gauge_key) continue;
        int real = col->kind == GPUFL_COL_PCT || col->kind == GPUFL_COL_FIX2;
        double v = real ? cells[c].d : (double)cells[c].i;
        out->columns[n] = col->name;
        out->values[n] = v;
        /* Negative is the wire's null for every kind but a plain integer. */
        out->present[n] = col->kind == GPUFL_COL_INT || v >= 0;
        out->ncolumns++;
    }
    return 0;
}

int gpufl_readings_host(gpufl_readings_row_t *out, gpufl_readings_t *r) {
    return read_row(out, r, &gpufl__wire_host_sample, 0);
}

int gpufl_readings_device_row(gpufl_readings_row_t *out, gpufl_readings_t *r, int device) {
    return read_row(out, r, &gpufl__wire_gpu_sample, device);
}

int gpufl_readings_value(double *value, const gpufl_readings_row_t *row, const char *column) {
    for (int i = 0; row && column && i < row->ncolumns; i++) {
        if (strcmp(row->columns[i], column) != 0) continue;
        if (!row->present[i]) break;
        *value = row->values[i];
        return 0;
    }
    return gpufl__set_error(GPUFL_ENOTFOUND, "no value for column '%s'", column ? column : "");
}

size_t gpufl_readings_device_count(gpufl_readings_t *r) {
    if (!r) return 0;
    pthread_mutex_lock(&r->lock);
    size_t n = r->ndevices;
    pthread_mutex_unlock(&r->lock);
    return n;
}

int gpufl_readings_device_info(gpufl_readings_device_t *out, gpufl_readings_t *r, size_t i) {
    if (!out || !r || out->size < sizeof *out)
        return gpufl__set_error(GPUFL_EINVAL, "readings: NULL argument or device size too small");
    int rc = 0;
    pthread_mutex_lock(&r->lock);
    if (i < r->ndevices)
        *out = r->devices[i];
    else
        rc = gpufl__set_error(GPUFL_ENOTFOUND, "no device %zu (%zu known)", i, r->ndevices);
    pthread_mutex_unlock(&r->lock);
    return rc;
}

int gpufl_readings_throttle_reason(char *buf, size_t size, gpufl_readings_t *r, int bit) {
    if (!buf || !r || bit < 0 || bit > 63)
        return gpufl__set_error(GPUFL_EINVAL, "readings: bad throttle reason bit %d", bit);
    int rc;
    pthread_mutex_lock(&r->lock);
    size_t n = strlen(r->reasons[bit]);
    if (n == 0)
        rc = gpufl__set_error(GPUFL_ENOTFOUND, "throttle reason bit %d has no name", bit);
    else if (n + 1 > size)
        rc = gpufl__set_error(GPUFL_EINVAL, "buffer too small for throttle reason %d", bit);
    else
        rc = (int)strlen(memcpy(buf, r->reasons[bit], n + 1));
    pthread_mutex_unlock(&r->lock);
    return rc;
}

int gpufl_readings_gpu_available(char *why, size_t size, gpufl_readings_t *r) {
    if (!r) return 0;
    pthread_mutex_lock(&r->lock);
    int on = r->have_caps && r->gpu_on;
    if (why && size) snprintf(why, size, "%s", on ? "" : r->gpu_why);
    pthread_mutex_unlock(&r->lock);
    return on;
}

int gpufl_readings_processes(gpufl_readings_process_t *out, size_t max, gpufl_readings_t *r,
                             int device) {
    /* The first release's struct ended at slurm_job_source: callers built
     * against it get the fields they know. */
    const size_t first_size = offsetof(gpufl_readings_process_t, sm_util_pct);
    if (!out || !r || max == 0 || out->size < first_size)
        return gpufl__set_error(GPUFL_EINVAL, "readings: NULL argument or process size too small");
    /* A newer caller's elements are larger, an older one's smaller: step by
     * its size, fill what both know. */
    size_t stride = out->size, n = 0, copy = stride < sizeof *out ? stride : sizeof *out;
    int rc = GPUFL_ENOTFOUND;
    pthread_mutex_lock(&r->lock);
    for (int d = 0; d < DEVICES_MAX; d++) {
        const proc_list_t *list = &r->lists[d];
        if (list->index < 0 || list->index != device) continue;
        for (n = 0; n < (size_t)list->n && n < max; n++) {
            gpufl_readings_process_t *o = (gpufl_readings_process_t *)((char *)out + n * stride);
            memcpy(o, &list->procs[n], copy);
            o->size = stride;
        }
        rc = (int)n;
    }
    pthread_mutex_unlock(&r->lock);
    if (rc == GPUFL_ENOTFOUND) gpufl__set_error(rc, "no process list for device %d yet", device);
    return rc;
}

int gpufl_readings_xids(gpufl_readings_xid_t *out, size_t max, gpufl_readings_t *r, int device) {
    if (!out || !r || max == 0 || out->size < sizeof *out)
        return gpufl__set_error(GPUFL_EINVAL, "readings: NULL argument or xid size too small");
    size_t stride = out->size, n = 0;
    pthread_mutex_lock(&r->lock);
    for (int d = 0; d < DEVICES_MAX; d++) {
        const xid_list_t *list = &r->xids[d];
        if (list->index < 0 || list->index != device) continue;
        for (n = 0; n < (size_t)list->n && n < max; n++) {
            gpufl_readings_xid_t *o = (gpufl_readings_xid_t *)((char *)out + n * stride);
            memcpy(o, &list->codes[n], sizeof *o);
            o->size = stride;
        }
    }
    pthread_mutex_unlock(&r->lock);
    return (int)n;
}
