// SPDX-License-Identifier: Apache-2.0
/*
 * gpu_sampler.c - turns NVML readings into device.log records.
 *
 * Runs on the collector thread, under the same policy as the host sampler:
 * every period with continuous_system_sampling, else only while a scope or
 * system window is open. The NVML calls run on one worker thread per device,
 * waited for at most a budget per pass: a device whose call hangs misses its
 * rows (counted, a gpu_slow event) while the others' and the host's go on.
 * It times its own samples (per device) and writes their cost as a
 * source_cost record at shutdown.
 */
#include "nvidia/gpu_sampler.h"

#include "core/clock.h"
#include "core/flight_recorder.h"
#include "core/wire_session.h"
#include "util/error.h"
#include "util/log.h"

#include <gpufl/gpufl_log.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GPU_SLOW_EVERY_NS 1000000000LL
/* Processes whose attribution is kept: far more than a host runs on its GPUs
 * at once; past it the least recently listed are read again when they come
 * back (and described again). */
#define ATTRIB_CACHE_ENTRIES 1024
/* XID events taken per pass; more stay pending in NVML for the next pass. */
#define XIDS_PER_PASS 64
/* The least a pass waits for its devices: a sample takes well under a
 * millisecond, so only a stuck call misses it, even at 10 ms intervals. */
#define BUDGET_MIN_NS 100000000LL

/* One device's request and reading, owned by its worker. */
struct gpufl__gpu_job {
    gpufl__nvml_t *nvml;
    int device;
    int64_t now_ns;
    gpufl__gpu_sample_t x;
    int rc;
    int64_t cost_ns;
};

static void run_job(void *arg) {
    gpufl__gpu_job_t *j = arg;
    int64_t t0 = gpufl__mono_ns();
    j->rc = gpufl__nvml_sample(&j->x, j->nvml, j->device, j->now_ns);
    j->cost_ns = gpufl__mono_ns() - t0;
}

static void to_cells(int64_t ts, int device, const gpufl__gpu_sample_t *x, gpufl__cell_t *row) {
    int64_t ints[] = {
        ts, device, x->gpu_util_pct, x->mem_util_pct, x->mem_used_bytes, x->mem_free_bytes,
        x->mem_total_bytes, x->temp_gpu_c, x->temp_mem_c, x->power_mw, x->power_limit_mw,
        x->energy_mj, x->clock_sm_mhz, x->clock_gfx_mhz, x->clock_mem_mhz, x->fan_pct,
        x->pcie_tx_bytes_per_s, x->pcie_rx_bytes_per_s,
        /* UINT64_MAX is "unknown"; real reasons use the low bits */
        x->throttle_reasons == UINT64_MAX ? GPUFL_GPU_UNKNOWN
                                          : (int64_t)(x->throttle_reasons & ((1ull << 53) - 1)),
        x->ecc_sbe_volatile, x->ecc_dbe_volatile, x->nvlink_tx_bytes_per_s,
        x->nvlink_rx_bytes_per_s};
    enum { NINTS = sizeof ints / sizeof ints[0] };
    for (int i = 0; i < NINTS; i++) row[i].i = ints[i];
    row[NINTS + 0].d = x->sm_active_pct;
    row[NINTS + 1].d = x->sm_occupancy_pct;
    row[NINTS + 2].d = x->tensor_active_pct;
    row[NINTS + 3].d = x->dram_bw_util_pct;
}

static void write_info(gpufl__gpu_sampler_t *s) {
    for (int d = 0; d < gpufl__nvml_device_count(s->nvml); d++) {
        const gpufl__gpu_info_t *g = gpufl__nvml_device_info(s->nvml, d);
        char cc[16];
        snprintf(cc, sizeof cc, "%d.%d", g->cc_major, g->cc_minor);
        gpufl__wire_gpu_info_t w = {.device = d,
                                    .vendor = GPUFL_LOG_VENDOR_NVIDIA,
                                    .library_index = g->index,
                                    .partition_index = g->mig_index,
                                    .name = g->name,
                                    .uuid = g->uuid,
                                    .pci_bus_id = g->pci_bus_id,
                                    .compute_capability = g->cc_major >= 0 ? cc : "",
                                    .sm_count = g->sm_count,
                                    .mem_total_bytes = g->mem_total_bytes,
                                    .driver_version = g->driver_version,
                                    .compute_driver_version = g->cuda_driver_version,
                                    .partition_mode = g->mig_mode,
                                    .perf_metrics_supported = g->gpm_supported,
                                    .interconnect_links = g->nvlink_links,
                                    .power_limit_mw = g->power_limit_mw,
                                    .library_version = gpufl__nvml_version(s->nvml)};
        gpufl__line_t l;
        gpufl__wire_gpu_info(&l, &w);
        gpufl__collector_record(s->collector, GPUFL_FILE_DEVICE, &l);
    }
    /* The names of the throttle reason bits, so the log explains itself. */
    gpufl__wire_gpu_legend_t legend;
    for (int bit = 0; bit < 64; bit++)
        legend.throttle_reasons[bit] = gpufl__nvml_throttle_name(bit);
    gpufl__line_t l;
    gpufl__wire_gpu_legend(&l, &legend);
    gpufl__collector_record(s->collector, GPUFL_FILE_DEVICE, &l);
}

static uint64_t proc_signature(const gpufl__gpu_sample_t *x) {
    uint64_t h = 1469598103934665603ull ^ (uint64_t)x->nprocs;
    int n = x->nprocs < GPUFL_GPU_PROCS_MAX ? x->nprocs : GPUFL_GPU_PROCS_MAX;
    for (int i = 0; i < n; i++)
        h = ((h ^ (uint64_t)x->procs[i].pid) * 1099511628211ull ^
             (uint64_t)(x->procs[i].used_bytes >> 20) ^
             (uint64_t)(uint32_t)x->procs[i].sm_util_pct << 32) *
                1099511628211ull ^
            (uint64_t)(uint32_t)x->procs[i].mem_util_pct;
    return h;
}

/* A process_info record for pid when the cache had to read it in full: a pid
 * new to the session or a new process under a reused pid. A process gone
 * before it could be read, or unreadable, gets none (readers leave it out). */
static void describe_process(gpufl__gpu_sampler_t *s, int d, int64_t ts, int pid) {
    gpufl__proc_attrib_cache_stats_t before, after;
    gpufl__proc_attrib_t a;
    if (!s->attrib || pid <= 0) return;
    gpufl__proc_attrib_cache_stats(&before, s->attrib);
    if (gpufl__proc_attrib_cache_get(&a, s->attrib, pid) != 0) return;
    gpufl__proc_attrib_cache_stats(&after, s->attrib);
    if (after.misses == before.misses) return; /* described when first read */
    gpufl__wire_process_info_t w = {
        .ts_ns = ts,
        .device = d,
        .pid = pid,
        .start_ticks = a.start_ticks,
        .comm = a.comm,
        .uid = a.uid,
        .user = a.user,
        .cgroup_path = a.cgroup.path,
        .container_id = a.cgroup.container_id,
        .container_runtime = gpufl__proc_attrib_runtime_name(a.cgroup.runtime),
        .pod_uid = a.cgroup.pod_uid,
        .pod_qos = gpufl__proc_attrib_qos_name(a.cgroup.pod_qos),
        .slurm_job_id = a.slurm_job_id,
        .slurm_job_source = gpufl__proc_attrib_slurm_from_name(a.slurm_from)};
    gpufl__line_t l;
    gpufl__wire_process_info(&l, &w);
    gpufl__collector_record(s->collector, GPUFL_FILE_DEVICE, &l);
}

/* Processes are written when the list, their memory (to the MiB) or their
 * utilization changes;
 * the processes new to it are described first, so a reader knows them. */
static void write_processes(gpufl__gpu_sampler_t *s, int d, int64_t ts,
                            const gpufl__gpu_sample_t *x) {
    uint64_t sig = proc_signature(x);
    if (sig == s->proc_sig[d] || x->nprocs < 0) return;
    s->proc_sig[d] = sig;
    int n = x->nprocs < GPUFL_GPU_PROCS_MAX ? x->nprocs : GPUFL_GPU_PROCS_MAX;
    int64_t pid[GPUFL_GPU_PROCS_MAX], used[GPUFL_GPU_PROCS_MAX];
    int64_t sm[GPUFL_GPU_PROCS_MAX], mem[GPUFL_GPU_PROCS_MAX];
    for (int i = 0; i < n; i++) {
        pid[i] = x->procs[i].pid;
        used[i] = x->procs[i].used_bytes;
        sm[i] = x->procs[i].sm_util_pct;
        mem[i] = x->procs[i].mem_util_pct;
        describe_process(s, d, ts, x->procs[i].pid);
    }
    gpufl__line_t l;
    gpufl__wire_processes_t p = {
        .pid = pid, .used_bytes = used, .sm_util_pct = sm, .mem_util_pct = mem};
    gpufl__wire_gpu_processes(&l, ts, d, x->nprocs, &p, n);
    gpufl__collector_record(s->collector, GPUFL_FILE_DEVICE, &l);
}

/* Critical XID errors pending since the last pass, one xid record each,
 * stamped with this pass's time (NVML's events carry none). */
static void write_xids(gpufl__gpu_sampler_t *s, int64_t ts) {
    gpufl__xid_event_t ev[XIDS_PER_PASS];
    int n = gpufl__nvml_xid_events(ev, XIDS_PER_PASS, s->nvml);
    for (int i = 0; i < n; i++) {
        gpufl__line_t l;
        gpufl__wire_xid(&l, ts, ev[i].device, ev[i].code, ev[i].gpu_instance_id,
                        ev[i].compute_instance_id);
        gpufl__collector_record(s->collector, GPUFL_FILE_DEVICE, &l);
    }
    if (n > 0) { /* the burst's first: the recorder holds off the rest of the burst itself */
        char why[48];
        snprintf(why, sizeof why, "xid:%llu", ev[0].code);
        gpufl__flight_fault(why);
    }
}

static void encode_batch(gpufl__gpu_sampler_t *s) {
    gpufl__collector_batch(s->collector, GPUFL_FILE_DEVICE, &s->batch);
}

/* A device whose sample failed with GPU_IS_LOST: said once, not sampled again. */
static void mark_lost(gpufl__gpu_sampler_t *s, int d) {
    char msg[256];
    s->lost[d] = 1;
    snprintf(msg, sizeof msg, "GPU %d (%s) stopped answering NVML; no more samples from it", d,
             gpufl__nvml_device_info(s->nvml, d)->uuid);
    gpufl__warn("%s", msg);
    gpufl__collector_event(s->collector, GPUFL_FILE_DEVICE, "error", "gpu_lost", msg);
    gpufl__flight_fault("gpu_lost");
}

/* A device that missed this pass's budget; the event once per stall. */
static void mark_slow(gpufl__gpu_sampler_t *s, int d) {
    s->slow_passes[d]++;
    s->cost.missed++;
    if (s->late[d]) return;
    s->late[d] = 1;
    char msg[256];
    snprintf(msg, sizeof msg,
             "GPU %d (%s): an NVML call took over %lld ms; its rows are left out until it "
             "returns",
             d, gpufl__nvml_device_info(s->nvml, d)->uuid, (long long)(s->budget_ns / 1000000));
    gpufl__warn("%s", msg);
    gpufl__collector_event(s->collector, GPUFL_FILE_DEVICE, "warn", "gpu_slow", msg);
}

static void take(gpufl__gpu_sampler_t *s, int d, int64_t ts, int keep) {
    gpufl__gpu_job_t *j = s->job[d];
    gpufl__cost_add(&s->cost, j->cost_ns);
    if (j->rc == GPUFL_EIO) return mark_lost(s, d);
    if (!keep) return; /* baseline: rates start from here */
    gpufl__cell_t *row = gpufl__collector_row(s->collector, GPUFL_FILE_DEVICE, &s->batch);
    if (row) to_cells(ts, d, &j->x, row);
    write_processes(s, d, ts, &j->x);
}

static void sample_all(gpufl__gpu_sampler_t *s, int64_t now_ns, int keep) {
    int64_t ts = gpufl__collector_session_ns(s->collector, now_ns);
    int n = gpufl__nvml_device_count(s->nvml);
    int posted[GPUFL_GPU_MAX] = {0};
    for (int d = 0; d < n; d++) {
        if (s->lost[d]) continue;
        if (!gpufl__worker_idle(s->worker[d])) {
            mark_slow(s, d); /* still inside last pass's call */
            continue;
        }
        if (s->late[d]) { /* the late call returned: its reading is stale */
            s->late[d] = 0;
            gpufl__cost_add(&s->cost, s->job[d]->cost_ns);
            if (s->job[d]->rc == GPUFL_EIO) {
                mark_lost(s, d);
                continue;
            }
        }
        s->job[d]->now_ns = now_ns;
        gpufl__worker_post(s->worker[d]);
        posted[d] = 1;
    }
    int64_t deadline = gpufl__mono_ns() + s->budget_ns;
    for (int d = 0; d < n; d++) {
        if (!posted[d]) continue;
        if (gpufl__worker_wait(s->worker[d], deadline))
            take(s, d, ts, keep);
        else
            mark_slow(s, d);
    }
    write_xids(s, ts); /* on a baseline pass too: an error is not a rate */
}

static void poll(gpufl__collector_t *c, void *self, int64_t now_ns) {
    gpufl__gpu_sampler_t *s = self;
    switch (gpufl__sampling_step(&s->when, gpufl__collector_sampling_active(c), now_ns)) {
    case GPUFL_SAMPLE_NONE: break;
    case GPUFL_SAMPLE_BASELINE: sample_all(s, now_ns, 0); break;
    case GPUFL_SAMPLE_TAKE: sample_all(s, now_ns, 1); break;
    }
}

static int64_t due_in(void *self, int64_t now_ns) {
    return gpufl__sampling_due_in(&((gpufl__gpu_sampler_t *)self)->when, now_ns);
}

static void flush(gpufl__collector_t *c, void *self) {
    (void)c;
    encode_batch(self);
}

static void finish(gpufl__collector_t *c, void *self) {
    gpufl__gpu_sampler_t *s = self;
    gpufl__cost_part_t parts[GPUFL_NVML_PARTS];
    for (int i = 0; i < GPUFL_NVML_PARTS; i++)
        parts[i].mean_ns = gpufl__nvml_part_cost(s->nvml, i, &parts[i].name);
    gpufl__collector_source_cost(c, GPUFL_FILE_DEVICE, "nvml", &s->cost, parts, GPUFL_NVML_PARTS);
    for (int d = 0; d < gpufl__nvml_device_count(s->nvml); d++)
        if (s->slow_passes[d] > 0)
            gpufl__warn("gpu sampler: GPU %d missed its %lld ms budget in %lld passes", d,
                        (long long)(s->budget_ns / 1000000), (long long)s->slow_passes[d]);
}

static int start_workers(gpufl__gpu_sampler_t *s) {
    for (int d = 0; d < gpufl__nvml_device_count(s->nvml); d++) {
        gpufl__gpu_job_t *j = calloc(1, sizeof *j);
        if (j == NULL) return gpufl__set_error(GPUFL_ENOMEM, "gpu sampler: out of memory");
        j->nvml = s->nvml;
        j->device = d;
        int rc = gpufl__worker_start(&s->worker[d], run_job, j, free);
        if (rc) {
            free(j);
            return rc;
        }
        s->job[d] = j;
    }
    return 0;
}

/* Returns how many workers are still inside NVML (left to finish alone). */
static int stop_workers(gpufl__gpu_sampler_t *s) {
    int stuck = 0;
    for (int d = 0; d < GPUFL_GPU_MAX; d++) {
        stuck += gpufl__worker_stop(s->worker[d]);
        s->worker[d] = NULL;
        s->job[d] = NULL;
    }
    return stuck;
}

int gpufl__gpu_sampler_init(gpufl__gpu_sampler_t *s, gpufl__nvml_t *nvml, gpufl__collector_t *c,
                            const gpufl__settings_t *settings, gpufl__source_t *source) {
    memset(s, 0, sizeof *s);
    s->nvml = nvml;
    s->collector = c;
    gpufl__sampling_init(&s->when, settings->system_sample_rate_ms,
                         settings->continuous_system_sampling);
    /* A pass waits at most one interval: a stuck device then costs the
     * others a late row, never a lost one. */
    s->budget_ns = (int64_t)settings->system_sample_rate_ms * 1000000;
    if (s->budget_ns < BUDGET_MIN_NS) s->budget_ns = BUDGET_MIN_NS;
    int rc = gpufl__batch_init_table(&s->batch, &gpufl__wire_gpu_sample);
    if (rc) return rc;
    rc = start_workers(s);
    if (rc) {
        stop_workers(s);
        gpufl__batch_fini(&s->batch);
        return rc;
    }
    /* GPM and process lists cost ~10x the rest of a sample (measured on
     * H100/H200): read them at most once a second, the window DCGM's
     * profiling metrics use by default. */
    gpufl__nvml_set_slow_interval(nvml, GPU_SLOW_EVERY_NS);
    /* Without a cache processes are listed but not described. */
    if (gpufl__proc_attrib_cache_create(&s->attrib, "/proc", ATTRIB_CACHE_ENTRIES) != 0)
        gpufl__warn("gpu sampler: no process attribution: %s", gpufl_last_error());
    write_info(s);
    *source = (gpufl__source_t){"nvml", s, poll, due_in, flush, finish};
    return 0;
}

void gpufl__gpu_sampler_fini(gpufl__gpu_sampler_t *s) {
    if (!s->nvml) return;
    if (s->cost.samples > 0)
        gpufl__debug("NVML sampling cost per device and sample: median %.0f us, mean %.1f us "
                     "(%lld samples)",
                     (double)gpufl__cost_quantile(&s->cost, 0.5) / 1000.0,
                     (double)s->cost.total_ns / (double)s->cost.samples / 1000.0,
                     (long long)s->cost.samples);
    int stuck = stop_workers(s);
    gpufl__batch_fini(&s->batch);
    gpufl__proc_attrib_cache_destroy(s->attrib);
    s->attrib = NULL;
    /* A worker still inside NVML reads s->nvml when its call returns: NVML
     * is then neither shut down nor freed (the process is ending anyway). */
    if (stuck)
        gpufl__warn("gpu sampler: %d NVML call%s still running at stop; NVML left open", stuck,
                    stuck == 1 ? "" : "s");
    else
        gpufl__nvml_close(s->nvml);
    s->nvml = NULL;
}
