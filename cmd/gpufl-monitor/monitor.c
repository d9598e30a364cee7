// SPDX-License-Identifier: Apache-2.0
/*
 * monitor.c - gpufl-monitor's session and its snapshot: a Monitor session
 * that samples every GPU and the host continuously, latest-value readings
 * attached to it (gpufl_readings_*), and once per interval a snapshot built
 * from them and published for the HTTP side.
 *
 * The snapshot is built outside any lock, then copied into the published one
 * under a mutex held only for that copy; a scrape copies it out the same way
 * and renders its own copy, so neither side waits on NVML or on the other.
 */
#include "monitor.h"

#include <gpufl/gpufl.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct mon_monitor {
    mon_settings_t settings;
    gpufl_readings_t *readings;
    mon_otlp_t *otlp;     /* NULL: no --otlp-endpoint */
    pthread_mutex_t lock; /* published */
    mon_snapshot_t published;
    mon_snapshot_t next, prev; /* the sampling thread's own */
    int have_prev;
    atomic_uint_fast64_t scrapes;
    uint64_t samples_before; /* host rows of the sessions before a reopen */
    uint64_t host_updates;
    int64_t started_ns, last_host_ns; /* CLOCK_MONOTONIC: newest host row seen */
    mon_self_t self;                  /* the sample-time histograms, kept across snapshots */
    /* Names of throttle bits, filled once and never rewritten: snapshots
     * point into it while a scrape renders them. */
    char reason_names[MON_MAX_REASONS][64];
    /* Each device's XID counts in the readings already added to its
     * counters; the readings count from 0 again after a reopen. */
    struct {
        int device;
        uint64_t code, counted;
    } xids_seen[MON_MAX_DEVICES * MON_MAX_XIDS];
    int nxids_seen;
};

static int64_t mono_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int start_session(mon_monitor_t *m) {
    const mon_settings_t *s = &m->settings;
    gpufl_options_t o;
    gpufl_options_init(&o);
    o.app_name = "gpufl-monitor";
    o.log_path = s->log_path;
    o.profiling_engine = GPUFL_ENGINE_MONITOR;
    o.system_sample_rate_ms = s->interval_ms;
    o.continuous_system_sampling = 1;
    o.log_rotate_interval_ms = s->window_s * 1000;
    /* Rows reach the readings at each flush: no later than one interval. */
    o.flush_interval_ms = s->interval_ms < 250 ? s->interval_ms : 250;
    int rc = gpufl_init(&o);
    if (rc) {
        fprintf(stderr, "gpufl-monitor: cannot start the session: %s\n", gpufl_last_error());
        return -1;
    }
    if ((rc = gpufl_readings_create(&m->readings))) {
        fprintf(stderr, "gpufl-monitor: cannot attach the readings: %s\n", gpufl_last_error());
        gpufl_shutdown();
        return -1;
    }
    return 0;
}

int mon_monitor_start(mon_monitor_t **out, const mon_settings_t *s) {
    mon_monitor_t *m = calloc(1, sizeof *m);
    *out = NULL;
    if (!m) return -1;
    m->settings = *s;
    pthread_mutex_init(&m->lock, NULL);
    m->started_ns = mono_ns();
    if (start_session(m)) {
        pthread_mutex_destroy(&m->lock);
        free(m);
        return -1;
    }
    if (s->otlp_endpoint) {
        char why[256];
        if (mon_otlp_start(&m->otlp, s->otlp_endpoint, s->interval_ms, why, sizeof why)) {
            fprintf(stderr, "gpufl-monitor: %s\n", why);
            mon_monitor_stop(m);
            return -1;
        }
    }
    mon_monitor_sample(m);
    *out = m;
    return 0;
}

static void copy_row(mon_value_t *cols, int *ncols, const gpufl_readings_row_t *row) {
    *ncols = 0;
    for (int i = 0; i < row->ncolumns && *ncols < MON_MAX_COLS; i++) {
        mon_value_t *v = &cols[(*ncols)++];
        v->column = row->columns[i];
        v->value = row->values[i];
        v->present = row->present[i];
        v->taken_ns = row->ts_ns;
    }
}

/* Columns the new row left out take the previous snapshot's value while it
 * is under MON_CARRY_NS old, with the time it was read. */
static void carry_forward(mon_device_t *d, const mon_device_t *prev) {
    for (int i = 0; i < prev->ncols && i < MON_MAX_COLS; i++) {
        const mon_value_t *old = &prev->cols[i];
        if (!old->present || d->ts_ns - old->taken_ns > MON_CARRY_NS) continue;
        int j = 0;
        while (j < d->ncols && strcmp(d->cols[j].column, old->column) != 0) j++;
        if (j < d->ncols && d->cols[j].present) continue;
        if (j == d->ncols) {
            if (d->ncols == MON_MAX_COLS) continue;
            d->ncols++;
        }
        d->cols[j] = *old;
    }
}

static const mon_device_t *prev_device(const mon_monitor_t *m, int index) {
    for (int i = 0; m->have_prev && i < m->prev.ndevices; i++)
        if (m->prev.devices[i].index == index) return &m->prev.devices[i];
    return NULL;
}

/* The device's latest process list, with who each process is. */
static void fill_processes(mon_monitor_t *m, mon_device_t *d) {
    gpufl_readings_process_t procs[MON_MAX_PROCESSES];
    procs[0].size = sizeof procs[0];
    int n = gpufl_readings_processes(procs, MON_MAX_PROCESSES, m->readings, d->index);
    for (int i = 0; i < n; i++) {
        mon_process_t *p = &d->processes[d->nprocesses++];
        p->pid = procs[i].pid;
        p->used_bytes = procs[i].used_bytes;
        p->sm_util_pct = procs[i].sm_util_pct;
        p->mem_util_pct = procs[i].mem_util_pct;
        snprintf(p->comm, sizeof p->comm, "%s", procs[i].comm);
        snprintf(p->user, sizeof p->user, "%s", procs[i].user);
        snprintf(p->container, sizeof p->container, "%s", procs[i].container_id);
        snprintf(p->pod_uid, sizeof p->pod_uid, "%s", procs[i].pod_uid);
        snprintf(p->slurm_job, sizeof p->slurm_job, "%s", procs[i].slurm_job_id);
    }
}

static uint64_t *xid_seen(mon_monitor_t *m, int device, uint64_t code) {
    for (int i = 0; i < m->nxids_seen; i++)
        if (m->xids_seen[i].device == device && m->xids_seen[i].code == code)
            return &m->xids_seen[i].counted;
    if (m->nxids_seen == MON_MAX_DEVICES * MON_MAX_XIDS) return NULL;
    m->xids_seen[m->nxids_seen].device = device;
    m->xids_seen[m->nxids_seen].code = code;
    m->xids_seen[m->nxids_seen].counted = 0;
    return &m->xids_seen[m->nxids_seen++].counted;
}

/* The XID events that came since the last snapshot, added to the counters
 * the device took over from it (a lost device's too: XID 79 is how it went). */
static void count_xids(mon_monitor_t *m, mon_device_t *d) {
    gpufl_readings_xid_t xids[MON_MAX_XIDS];
    xids[0].size = sizeof xids[0];
    int n = gpufl_readings_xids(xids, MON_MAX_XIDS, m->readings, d->index);
    for (int i = 0; i < n; i++) {
        uint64_t *counted = xid_seen(m, d->index, xids[i].code);
        for (; counted && *counted < xids[i].count; (*counted)++)
            mon_counters_xid(d, (unsigned)xids[i].code);
    }
}

static void fill_device(mon_monitor_t *m, mon_device_t *d, const gpufl_readings_device_t *info) {
    gpufl_readings_row_t row = {.size = sizeof row};
    const mon_device_t *prev = prev_device(m, info->index);
    memset(d, 0, sizeof *d);
    d->index = info->index;
    snprintf(d->uuid, sizeof d->uuid, "%s", info->uuid);
    snprintf(d->pci_bus_id, sizeof d->pci_bus_id, "%s", info->pci_bus_id);
    snprintf(d->model, sizeof d->model, "%s", info->name);
    d->mig_instance = info->mig_index;
    snprintf(d->mig_profile, sizeof d->mig_profile, "%s", info->mig_profile);
    d->lost = info->lost;
    for (int bit = 0; bit < MON_MAX_REASONS; bit++)
        d->throttle_reason_names[bit] = m->reason_names[bit][0] ? m->reason_names[bit] : NULL;
    if (gpufl_readings_device_row(&row, m->readings, info->index) == 0) {
        d->ts_ns = row.ts_ns;
        copy_row(d->cols, &d->ncols, &row);
        if (prev) carry_forward(d, prev);
    } else if (prev) { /* no row yet in this session (after a reopen): keep the last */
        d->ts_ns = prev->ts_ns;
        d->ncols = prev->ncols;
        memcpy(d->cols, prev->cols, sizeof d->cols);
    }
    if (prev && prev->ts_ns == d->ts_ns)
        d->counters = prev->counters; /* nothing new to add up */
    else
        mon_counters_advance(d, prev);
    count_xids(m, d);
    if (!d->lost) fill_processes(m, d);
}

void mon_monitor_sample(mon_monitor_t *m) {
    mon_snapshot_t *s = &m->next;
    gpufl_readings_row_t host = {.size = sizeof host};
    struct timespec wall;
    int64_t host_seen = 0;
    memset(s, 0, sizeof *s);
    if (gethostname(s->hostname, sizeof s->hostname - 1) != 0)
        snprintf(s->hostname, sizeof s->hostname, "unknown");
    clock_gettime(CLOCK_REALTIME, &wall);
    s->ts_unix_ms = (int64_t)wall.tv_sec * 1000 + wall.tv_nsec / 1000000;
    s->gpu_available = gpufl_readings_gpu_available(s->gpu_why, sizeof s->gpu_why, m->readings);
    for (int bit = 0; bit < MON_MAX_REASONS; bit++)
        if (!m->reason_names[bit][0])
            gpufl_readings_throttle_reason(m->reason_names[bit], sizeof m->reason_names[bit],
                                           m->readings, bit);
    int64_t t0 = mono_ns();
    if (gpufl_readings_host(&host, m->readings) == 0) {
        copy_row(s->host, &s->host_ncols, &host);
        if (host.updates != m->host_updates) host_seen = mono_ns();
        m->host_updates = host.updates;
    } else if (m->have_prev) {
        s->host_ncols = m->prev.host_ncols;
        memcpy(s->host, m->prev.host, sizeof s->host);
    }
    int64_t t1 = mono_ns();
    size_t n = gpufl_readings_device_count(m->readings);
    for (size_t i = 0; i < n && s->ndevices < MON_MAX_DEVICES; i++) {
        gpufl_readings_device_t info = {.size = sizeof info};
        if (gpufl_readings_device_info(&info, m->readings, i) == 0)
            fill_device(m, &s->devices[s->ndevices++], &info);
    }
    int64_t t2 = mono_ns();
    /* The daemon's own step per source: reading the host row, and reading
     * and adding up every device's (the NVML calls are the collector's). */
    mon_self_observe(&m->self, "host", (double)(t1 - t0) / 1e9);
    mon_self_observe(&m->self, "gpu", (double)(t2 - t1) / 1e9);
    s->self = m->self;
    gpufl_stats_t st = {.size = sizeof st};
    if (gpufl_get_stats(&st) == 0) s->self.write_errors_total = st.write_errors;
    s->self.samples_total = m->samples_before + m->host_updates;
    pthread_mutex_lock(&m->lock);
    memcpy(&m->published, s, sizeof *s);
    if (host_seen) m->last_host_ns = host_seen;
    pthread_mutex_unlock(&m->lock);
    mon_otlp_offer(m->otlp, s);
    memcpy(&m->prev, s, sizeof *s);
    m->have_prev = 1;
}

int mon_monitor_reopen(mon_monitor_t *m) {
    gpufl_shutdown();
    gpufl_readings_destroy(m->readings);
    m->readings = NULL;
    m->samples_before += m->host_updates;
    m->host_updates = 0;
    m->nxids_seen = 0; /* the new readings count their own XIDs from 0 */
    if (start_session(m)) return -1;
    char dir[4096];
    if (gpufl_session_dir(dir, sizeof dir) > 0) {
        fprintf(stderr, "gpufl-monitor: logs reopened: %s\n", dir);
        mon_crash_set_dir(dir);
    }
    return 0;
}

void mon_monitor_stop(mon_monitor_t *m) {
    if (!m) return;
    mon_otlp_stop(m->otlp);
    gpufl_shutdown();
    gpufl_readings_destroy(m->readings);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

void mon_monitor_snapshot(mon_snapshot_t *out, mon_monitor_t *m) {
    pthread_mutex_lock(&m->lock);
    memcpy(out, &m->published, sizeof *out);
    pthread_mutex_unlock(&m->lock);
    out->self.scrapes_total = atomic_load(&m->scrapes);
    mon_otlp_counts(m->otlp, &out->self);
}

void mon_monitor_count_scrape(mon_monitor_t *m) { atomic_fetch_add(&m->scrapes, 1); }

/* Stalled: no new host row for three intervals and two seconds of slack
 * (rows reach the readings at the session's flushes). */
int mon_monitor_healthy(mon_monitor_t *m, char *why, size_t size) {
    pthread_mutex_lock(&m->lock);
    int64_t since = m->last_host_ns ? m->last_host_ns : m->started_ns;
    pthread_mutex_unlock(&m->lock);
    int64_t age_ms = (mono_ns() - since) / 1000000;
    int64_t limit_ms = 3 * (int64_t)m->settings.interval_ms + 2000;
    if (age_ms <= limit_ms) return 1;
    snprintf(why, size, "sampling stalled: no host sample for %lld ms (limit %lld ms)",
             (long long)age_ms, (long long)limit_ms);
    return 0;
}
