// SPDX-License-Identifier: Apache-2.0
/*
 * backend.h - what the session asks of a vendor backend and of a host
 * source: tables of operations built at compile time (backends.c), so core
 * names no vendor and no source, and a new one is a file and a table entry.
 */
#ifndef GPUFL_CORE_BACKEND_H
#define GPUFL_CORE_BACKEND_H

#include "core/collector.h"
#include "core/wire_session.h"

/* gpufl__feature_t, an entry of the capability record: core/wire_session.h. */

#define GPUFL__FEATURES_MAX 16
#define GPUFL__BACKENDS_MAX 4 /* entries of gpufl__backends the session walks */

/* A vendor backend: its device library (the sampler of its devices) and its
 * profiling engines. The state of a running one is the backend file's own. */
typedef struct gpufl__backend_ops {
    const char *name;     /* in messages: "NVIDIA" */
    gpufl_backend_t kind; /* what the backend option names it */
    /* Opens the device library when this backend is asked for, by name or
     * Auto: 0 when it answers (then it is the session's backend), else
     * negative with a one-line reason in why. */
    int (*open)(const gpufl__settings_t *settings, char *why, size_t why_size);
    /* Starts the profiling engine the settings ask for, as far as the machine
     * allows, before the capability record. off_why: NULL when this backend
     * was asked for (open ran, whatever it returned), else why it was not
     * (another backend or None was asked for): nothing starts then. *engine
     * gets the engine that runs (Monitor when none); *source is filled and
     * *have_source set when the engine has a source for the collector. */
    void (*start_engine)(gpufl__collector_t *c, const gpufl__settings_t *settings,
                         const char *off_why, gpufl_engine_t *engine, gpufl__source_t *source,
                         int *have_source);
    /* After the capability record, when open succeeded: the device sampler
     * (it writes its device records), its source in *source. */
    int (*start_devices)(gpufl__collector_t *c, const gpufl__settings_t *settings,
                         gpufl__source_t *source);
    /* The backend's entries of the capability record, in order; returns how
     * many (at most max). */
    int (*features)(const gpufl__settings_t *settings, gpufl__feature_t *out, int max);
    /* After the record: warns when the engine that runs is not the one asked. */
    void (*explain_engine)(const gpufl__settings_t *settings);
    /* After the collector stopped: closes what start_* opened. Safe to repeat. */
    void (*stop)(void);
    /* In a forked child: forgets the parent's handles without closing them. */
    void (*after_fork_child)(void);
    /* Optional: what the machine gives this backend, without a session and
     * touching no session state: its libraries, driver and engines as
     * capability entries (gpufl__probe_add), its devices
     * (gpufl__probe_add_device). Libraries are opened and closed again. */
    void (*probe)(gpufl_probe_t *probe);
} gpufl__backend_ops_t;

/* What a backend's probe reports (probe.c): strings are copied; entries past
 * the probe's cap are dropped. A NULL reason of an entry that is off reads
 * "unknown reason". */
void gpufl__probe_add(gpufl_probe_t *probe, const char *feature, int on, const char *reason,
                      const char *detail);
void gpufl__probe_add_device(gpufl_probe_t *probe, const gpufl_device_info_t *device);

/* A host source, started for every session whatever the backend. */
typedef struct gpufl__source_ops {
    const char *name;
    /* Fills *source and the source's capability entry *feature. */
    int (*start)(gpufl__collector_t *c, const gpufl__settings_t *settings, gpufl__source_t *source,
                 gpufl__feature_t *feature);
    void (*stop)(void);
    /* Optional: system_start (open=1) / system_stop (open=0) from any thread. */
    int (*window)(const char *name, int open);
} gpufl__source_ops_t;

/* The backends built into this gpufl, in the order Auto tries them, and the
 * host sources, in start order: NULL-terminated (backends.c). */
extern const gpufl__backend_ops_t *const gpufl__backends[];
extern const gpufl__source_ops_t *const gpufl__host_sources[];

/* The entries, defined by the backends' and sources' own files. */
extern const gpufl__backend_ops_t gpufl__backend_nvidia;
extern const gpufl__source_ops_t gpufl__source_host;

/* Why no built backend of kind runs when it is asked for by name ("the AMD
 * backend is not built yet in this release", "backend None was asked
 * for"), or NULL when one of the table has that kind (or Auto). */
const char *gpufl__backend_absent_why(gpufl_backend_t kind);

#endif
