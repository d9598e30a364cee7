// SPDX-License-Identifier: Apache-2.0
/*
 * host_sampler.c - drives host_metrics on the collector thread and writes
 * host_info, host_sample batches and system_start/system_stop records.
 */
#include "host/host_sampler.h"

#include "core/backend.h"
#include "core/clock.h"
#include "util/error.h"
#include "util/log.h"
#include "core/scope.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static void sample_to_cells(const gpufl__host_sample_t *x, gpufl__cell_t *row) {
    row[0].i = x->ts_ns;
    row[1].d = x->cpu_pct;
    row[2].d = x->proc_cpu_pct;
    row[3].i = x->mem_used_bytes;
    row[4].i = x->mem_total_bytes;
    row[5].i = x->proc_rss_bytes;
    row[6].i = x->cg_mem_used_bytes;
    row[7].i = x->cg_mem_limit_bytes;
    row[8].d = x->cg_cpu_pct;
    row[9].d = x->cg_cpu_limit_cores;
}

/* Takes a sample, stamped with the time its reads began (the CPU figures
 * use the reader's own stamps of each read, never the nominal period);
 * caller holds s->lock. rebase: the first sample of an active stretch,
 * whose CPU counters become new baselines. Returns 0 when the reader works. */
static int take_by(gpufl__host_sampler_t *s, int rebase,
                   int (*read)(gpufl__host_sample_t *, gpufl__host_reader_t *),
                   gpufl__host_sample_t *out) {
    memset(out, 0, sizeof *out);
    if (!s->reader_ok) return -1;
    if (rebase) gpufl__host_reader_rebase(&s->reader);
    int64_t t0 = gpufl__mono_ns();
    read(out, &s->reader);
    gpufl__cost_add(&s->cost, gpufl__mono_ns() - t0);
    out->ts_ns = gpufl__collector_session_ns(s->collector, t0);
    return 0;
}

static int take(gpufl__host_sampler_t *s, int rebase, gpufl__host_sample_t *out) {
    return take_by(s, rebase, gpufl__host_sample, out);
}

static void poll(gpufl__collector_t *c, void *self, int64_t now_ns) {
    gpufl__host_sampler_t *s = self;
    gpufl__host_sample_t x;
    pthread_mutex_lock(&s->lock);
    switch (gpufl__sampling_step(&s->when, gpufl__collector_sampling_active(c), now_ns)) {
    case GPUFL_SAMPLE_NONE: break;
    case GPUFL_SAMPLE_BASELINE: take(s, 1, &x); break;
    case GPUFL_SAMPLE_TAKE:
        if (take(s, 0, &x) == 0) {
            gpufl__cell_t *row = gpufl__collector_row(c, GPUFL_FILE_SYSTEM, &s->batch);
            if (row) sample_to_cells(&x, row);
        }
        break;
    }
    pthread_mutex_unlock(&s->lock);
}

static int64_t due_in(void *self, int64_t now_ns) {
    gpufl__host_sampler_t *s = self;
    pthread_mutex_lock(&s->lock);
    int64_t due = gpufl__sampling_due_in(&s->when, now_ns);
    pthread_mutex_unlock(&s->lock);
    return due;
}

static void flush(gpufl__collector_t *c, void *self) {
    gpufl__host_sampler_t *s = self;
    pthread_mutex_lock(&s->lock);
    gpufl__collector_batch(c, GPUFL_FILE_SYSTEM, &s->batch);
    pthread_mutex_unlock(&s->lock);
}

/* The session's last sample, at stop, while a stretch is active (its
 * baselines are then from within it): its CPU figures need 2 ticks, not 9,
 * so a session shorter than the figures' interval still gets one, and a
 * longer one keeps the time since its last figure. */
static void take_final(gpufl__collector_t *c, gpufl__host_sampler_t *s) {
    gpufl__host_sample_t x;
    if (s->when.period_ns == 0 || !(s->when.continuous || s->when.was_active) ||
        take_by(s, 0, gpufl__host_sample_final, &x) != 0)
        return;
    gpufl__cell_t *row = gpufl__collector_row(c, GPUFL_FILE_SYSTEM, &s->batch);
    if (row) sample_to_cells(&x, row);
    gpufl__collector_batch(c, GPUFL_FILE_SYSTEM, &s->batch);
}

static void finish(gpufl__collector_t *c, void *self) {
    gpufl__host_sampler_t *s = self;
    pthread_mutex_lock(&s->lock);
    take_final(c, s);
    gpufl__collector_source_cost(c, GPUFL_FILE_SYSTEM, "host", &s->cost, NULL, 0);
    pthread_mutex_unlock(&s->lock);
}

static void write_host_info(gpufl__host_sampler_t *s) {
    const gpufl__host_info_t *h = &s->reader.info;
    gpufl__wire_host_info_t w = {.error = s->reader_ok ? NULL : gpufl_last_error(),
                                 .hostname = h->hostname,
                                 .kernel = h->kernel_release,
                                 .cgroup_path = h->cgroup_path,
                                 .cpu_count = h->cpu_count,
                                 .mem_total_bytes = h->mem_total_bytes,
                                 .cgroup_version = h->cgroup_version,
                                 .cg_mem_limit_bytes = h->cg_mem_limit_bytes,
                                 .cg_cpu_limit_cores = h->cg_cpu_limit_cores,
                                 .cpus_allowed = h->cpus_allowed,
                                 .clock_ticks_per_s = h->clock_ticks_per_s,
                                 .cpu_min_interval_ns = h->cpu_min_interval_ns};
    gpufl__line_t l;
    gpufl__wire_host_info(&l, &w);
    gpufl__collector_record(s->collector, GPUFL_FILE_SYSTEM, &l);
}

/* A period shorter than the CPU figures' shortest interval is kept (memory
 * is read at every sample, and the GPU sampler shares the period), but the
 * CPU columns then come at most once per interval, which the report says.
 * Below one clock tick no sample could ever count CPU time of its own: that
 * period is worth a warning at init (the demos' 20 ms is not). */
static void warn_short_period(const gpufl__host_sampler_t *s) {
    const gpufl__host_info_t *h = &s->reader.info;
    int64_t tick_ns = h->clock_ticks_per_s > 0 ? 1000000000 / h->clock_ticks_per_s : 10000000;
    if (!s->reader_ok || s->when.period_ns == 0 || s->when.period_ns >= tick_ns) return;
    gpufl__warn("system_sample_rate_ms is %lld, shorter than the kernel's CPU clock tick: host "
                "CPU figures need at least %lld ms (%d ticks of 1/%ld s), so samples in between "
                "carry none",
                (long long)(s->when.period_ns / 1000000),
                (long long)(h->cpu_min_interval_ns / 1000000), GPUFL_HOST_CPU_MIN_TICKS,
                h->clock_ticks_per_s);
}

int gpufl__host_sampler_init(gpufl__host_sampler_t *s, gpufl__collector_t *c,
                             const gpufl__settings_t *settings, const char *root,
                             gpufl__source_t *source) {
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->lock, NULL);
    s->collector = c;
    gpufl__sampling_init(&s->when, settings->system_sample_rate_ms,
                         settings->continuous_system_sampling);
    int rc = gpufl__batch_init_table(&s->batch, &gpufl__wire_host_sample);
    if (rc) return rc;
    s->reader_ok = gpufl__host_reader_init(&s->reader, root) == 0;
    if (!s->reader_ok) gpufl__warn("host metrics are off: %s", gpufl_last_error());
    warn_short_period(s);
    if (s->when.continuous) { /* baseline now: the first period gets its rates */
        gpufl__host_sample_t x;
        if (gpufl__sampling_step(&s->when, 1, gpufl__mono_ns()) == GPUFL_SAMPLE_BASELINE)
            take(s, 1, &x);
    }
    write_host_info(s);
    *source = (gpufl__source_t){"host", s, poll, due_in, flush, finish};
    return 0;
}

void gpufl__host_sampler_fini(gpufl__host_sampler_t *s) {
    for (int i = 0; i < s->nwindows; i++) free(s->windows[i]);
    s->nwindows = 0;
    if (s->reader_ok) gpufl__host_reader_fini(&s->reader);
    gpufl__batch_fini(&s->batch);
    pthread_mutex_destroy(&s->lock);
}

static void write_window_record(gpufl__host_sampler_t *s, const char *type, const char *name,
                                const gpufl__host_sample_t *x, int have_sample) {
    gpufl__cell_t cells[GPUFL_BATCH_MAX_COLS];
    gpufl__line_t l;
    if (have_sample) sample_to_cells(x, cells);
    gpufl__wire_system_window(&l, type, x->ts_ns, gpufl__thread_id(), name, s->nwindows,
                              have_sample ? cells : NULL);
    gpufl__collector_record(s->collector, GPUFL_FILE_SYSTEM, &l);
}

int gpufl__host_sampler_window(gpufl__host_sampler_t *s, const char *name, int open) {
    gpufl__host_sample_t x;
    int rc = 0, have;
    int64_t now = gpufl__mono_ns();
    pthread_mutex_lock(&s->lock);
    if (open) {
        char *copy = s->nwindows < GPUFL_HOST_WINDOWS_MAX ? strdup(name) : NULL;
        if (!copy) {
            rc = gpufl__set_error(GPUFL_ENOMEM, "too many open system windows (limit %d)",
                                  GPUFL_HOST_WINDOWS_MAX);
            goto unlock;
        }
        s->windows[s->nwindows++] = copy;
        gpufl__collector_windows_add(s->collector, 1);
    } else {
        int i = s->nwindows - 1;
        while (i >= 0 && strcmp(s->windows[i], name) != 0) i--;
        if (i < 0) {
            rc = gpufl__set_error(GPUFL_ENOTFOUND, "system_stop(\"%s\"): no such window is open",
                                  name);
            goto unlock;
        }
        free(s->windows[i]);
        memmove(&s->windows[i], &s->windows[i + 1],
                (size_t)(s->nwindows - i - 1) * sizeof s->windows[0]);
        s->nwindows--;
        gpufl__collector_windows_add(s->collector, -1);
    }
    /* Outside an active stretch the baselines are from before an idle one:
     * a figure over that would mislead, so this read starts afresh. */
    have = take(s, !(s->when.continuous || s->when.was_active), &x) == 0;
    x.ts_ns = gpufl__collector_session_ns(s->collector, now);
    write_window_record(s, open ? "system_start" : "system_stop", name, &x, have);
unlock:
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* ---------------- the host source of the session (core/backend.h) ---------------- */

static gpufl__host_sampler_t session_host; /* one session at a time (session.c's lock) */

static int host_start(gpufl__collector_t *c, const gpufl__settings_t *settings,
                      gpufl__source_t *source, gpufl__feature_t *feature) {
    int rc = gpufl__host_sampler_init(&session_host, c, settings, NULL, source);
    *feature = (gpufl__feature_t){"host_metrics", session_host.reader_ok,
                                  session_host.reader_ok ? NULL : "cannot read /proc"};
    return rc;
}

static void host_stop(void) { gpufl__host_sampler_fini(&session_host); }

static int host_window(const char *name, int open) {
    return gpufl__host_sampler_window(&session_host, name, open);
}

const gpufl__source_ops_t gpufl__source_host = {
    .name = "host",
    .start = host_start,
    .stop = host_stop,
    .window = host_window,
};
