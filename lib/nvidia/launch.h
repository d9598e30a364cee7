// SPDX-License-Identifier: Apache-2.0
/*
 * launch.h - what the application thread knew when it made a CUDA call.
 *
 * CUPTI's activity records (kernel, copy, memset, sync, allocation) say
 * nothing of the host thread. The driver-API callbacks do: they run on the
 * calling thread at the call, where this module notes the thread's open
 * scope, the kernel's launch configuration (with its occupancy, read once
 * per distinct configuration) and any external correlation id a framework
 * pushed. The note goes into a table indexed by CUPTI's correlation id,
 * which the activity record of the same call carries; the collector looks
 * it up when the record arrives.
 *
 * Synchronization calls are timed here too, from their enter to their exit
 * callback on the calling thread, and queued as rows for the collector
 * (CUPTI's synchronization records cost on every launch). Graph launches
 * are queued the same way.
 *
 * The table is direct-mapped (correlation id modulo its size): writing is
 * one store per field with no lock. A note is lost only when 2^18 later
 * calls reuse its slot before the record arrives; the lookup then misses
 * and the miss is counted. Known limit: two calls 2^18 ids apart that write
 * one slot at the same moment (a thread preempted inside its note while
 * 262,144 other calls run) can leave a note mixing both; it is not detected.
 *
 * Threads: the callbacks run on any application thread; lookup and the
 * take_* calls on the collector thread only.
 */
#ifndef GPUFL_NVIDIA_LAUNCH_H
#define GPUFL_NVIDIA_LAUNCH_H

#include "core/stacks.h"
#include "nvidia/cuda.h"
#include "nvidia/cupti.h"

#include <stddef.h>
#include <stdint.h>

typedef struct gpufl__launch gpufl__launch_t;

/* Options of create. */
#define GPUFL_LAUNCH_EXTERNAL (1u << 0) /* read external correlation ids at each call */
#define GPUFL_LAUNCH_GRAPHS   (1u << 1) /* queue graph launches */
#define GPUFL_LAUNCH_MEMORY   (1u << 2) /* note allocation and free calls too */
#define GPUFL_LAUNCH_SYNC     (1u << 3) /* time synchronization calls */
#define GPUFL_LAUNCH_ROWS     (1u << 4) /* queue a row per kernel launch (no kernel records) */
#define GPUFL_LAUNCH_GATE     (1u << 5) /* launches pass a gate the collector can close (PC sampling) */

#define GPUFL_LAUNCH_TABLE_BITS  18    /* 262144 notes, 48 bytes each */
#define GPUFL_LAUNCH_CONFIGS_MAX 65536 /* distinct launch configurations kept */
/* External correlation ids: looked for at every call until a thread has had
 * none for QUIET calls in a row, then at every EVERY-th call until found. */
#define GPUFL_LAUNCH_EXTERNAL_QUIET 1024
#define GPUFL_LAUNCH_EXTERNAL_EVERY 64
#define GPUFL_LAUNCH_QUEUE_MAX      (1u << 18) /* graph launches or syncs queued between passes */

/* What a call left behind. */
typedef struct gpufl__launch_info {
    uint64_t scope;         /* innermost open scope id of the thread; 0 none */
    uint32_t config;        /* kernel configuration id; 0 none or unknown */
    uint32_t external_kind; /* CUpti_ExternalCorrelationKind, valid when has_external */
    uint64_t external_id;
    int has_external;
    uint32_t stack;  /* CPU stack id at the call; 0 none */
    int32_t tid;     /* OS thread id of the caller */
    int64_t mono_ns; /* when the call was made (CLOCK_MONOTONIC) */
} gpufl__launch_info_t;

/* One distinct (function, block size, dynamic shared memory) launched. */
typedef struct gpufl__kernel_config {
    uint32_t id; /* from 1 */
    void *function;
    int block_threads;
    uint32_t dynamic_smem;
    int64_t first_mono_ns; /* when it was first launched */
    char *name;            /* mangled, as CUPTI gave it */
    int have_occupancy;    /* occupancy is valid */
    gpufl__kernel_occupancy_t occupancy;
    char why[160]; /* why there is no occupancy, when there is none */
} gpufl__kernel_config_t;

typedef struct gpufl__graph_launch {
    int64_t mono_ns;
    int32_t tid;
    uint32_t correlation;
    uint32_t graph_exec; /* CUPTI's id; 0 unknown */
    uint64_t scope;
} gpufl__graph_launch_t;

/* A kernel launch call, queued with GPUFL_LAUNCH_ROWS for engines that do
 * without CUPTI's kernel records. */
typedef struct gpufl__kernel_launch {
    int64_t mono_ns;
    void *context; /* the CUcontext launched on; NULL unknown */
    uint64_t scope;
    uint64_t external_id;
    uint32_t correlation;
    uint32_t config;        /* 0 unknown */
    uint32_t external_kind; /* kind + 1; 0 none */
    uint32_t stack;         /* 0 none */
    int32_t tid;
    /* With event pairs (gpufl__launch_set_events): the pair's handle (0:
     * untimed), CUPTI's stream id (-1 unknown), grid x y z and block x y z. */
    uint32_t events;
    int64_t stream;
    uint32_t grid[3], block[3];
} gpufl__kernel_launch_t;

/* A synchronization call, timed by its own callbacks: the host thread was
 * blocked from start to end. A call whose enter this module did not see
 * (begun before the session) is left out. */
typedef struct gpufl__sync_call {
    int64_t start_mono_ns, end_mono_ns;
    uint32_t type;    /* as CUPTI's: 1 event, 2 stream wait event, 3 stream, 4 context */
    uint32_t context; /* CUPTI's context id */
    int64_t stream;   /* CUPTI's stream id; -1 none */
    int64_t event;    /* the event's handle (53 bits); -1 none */
    uint32_t correlation;
    int32_t result; /* the call's CUresult */
    uint64_t scope;
    int32_t tid;    /* OS thread id of the caller */
    uint32_t stack; /* CPU stack id at the call; 0 none */
} gpufl__sync_call_t;

typedef struct gpufl__launch_stats {
    uint64_t lookups, misses;     /* lookups that found no note */
    uint64_t configs;             /* distinct configurations seen */
    uint64_t configs_dropped;     /* launches past GPUFL_LAUNCH_CONFIGS_MAX */
    uint64_t occupancy_failures;  /* configurations without occupancy */
    uint64_t graph_launches;      /* queued */
    uint64_t graph_launches_lost; /* the queue was full */
    uint64_t syncs;               /* synchronization calls timed */
    uint64_t syncs_lost;          /* the queue was full */
    uint64_t launches;            /* kernel launches queued (GPUFL_LAUNCH_ROWS) */
    uint64_t launches_lost;       /* the queue was full */
    uint64_t gate_waits;          /* launches that found the gate closed and waited */
    uint64_t gate_overruns; /* of those, launches that went on after GPUFL_LAUNCH_GATE_PASS_NS */
} gpufl__launch_stats_t;

/*
 * Subscribes to the driver-API callbacks of the calls noted. cuda may be
 * NULL (no occupancy; each configuration says why: cuda_why). With stacks,
 * the CPU stack of every kernel launch and synchronization call is captured
 * into it. Returns 0, or an error with why from gpufl__cupti_subscribe
 * (another CUPTI client).
 */
int gpufl__launch_create(gpufl__launch_t **out, gpufl__cupti_t *cupti, gpufl__cuda_t *cuda,
                         const char *cuda_why, unsigned int flags, gpufl__stacks_t *stacks,
                         char *why, size_t why_size);
/* Unsubscribes and frees. Accepts NULL. */
void gpufl__launch_destroy(gpufl__launch_t *l);

/* The note of a call: 1 and *out filled, 0 when none is left. */
int gpufl__launch_lookup(gpufl__launch_info_t *out, gpufl__launch_t *l, uint32_t correlation);

/* Configurations seen since the last call, in id order: *first gets a
 * pointer to the first, the count is returned. They stay valid until
 * destroy. */
size_t gpufl__launch_take_configs(gpufl__launch_t *l, gpufl__kernel_config_t *const **first);

/* The graph launches (syncs) queued since the last take, in *rows, valid
 * until the next take of the same kind; returns how many. */
size_t gpufl__launch_take_graphs(gpufl__launch_t *l, const gpufl__graph_launch_t **rows);
size_t gpufl__launch_take_syncs(gpufl__launch_t *l, const gpufl__sync_call_t **rows);
size_t gpufl__launch_take_launches(gpufl__launch_t *l, const gpufl__kernel_launch_t **rows);

void gpufl__launch_stats(gpufl__launch_stats_t *out, gpufl__launch_t *l);

/* What an engine above Trace hears from the callbacks, on application
 * threads inside CUPTI's callbacks: resource callbacks (contexts and
 * modules created and destroyed; gpufl__cupti_enable_resource turns them on)
 * and the first kernel launch a thread makes on each context, which finds
 * contexts created before the session. The hooks stay valid until
 * gpufl__launch_destroy; set them once, before the callbacks matter. */
typedef struct gpufl__launch_hooks {
    void (*resource)(void *user, uint32_t cbid, const void *resource_data);
    int (*context_seen)(void *user, void *context); /* 0: busy, call again later */
    void *user;
} gpufl__launch_hooks_t;
void gpufl__launch_set_hooks(gpufl__launch_t *l, const gpufl__launch_hooks_t *hooks);

/*
 * The launch gate (GPUFL_LAUNCH_GATE), for work of PC sampling's that must
 * not overlap a launch inside the driver (pc_sampling.h): a disable and
 * enable of sampling hung while the application launched; and under Deep,
 * where SASS metrics patch each function at its first launch inside the
 * launch call, GetData is kept out of that patching as a precaution.
 * With the gate, every kernel launch counts itself in from the end of its
 * enter callback (after gpufl's own work, which may take engine locks) to
 * the start of its exit callback, the part of the call where the driver
 * and CUPTI work. close waits until no launch is in and keeps new ones
 * out; open lets them on.
 *
 * close returns 0 once no launch is in, or -1 after wait_ns with one still
 * in (a first launch patching a large function; the gate is open again and
 * the caller tries later). A launch that finds the gate closed waits for
 * it, but at most GPUFL_LAUNCH_GATE_PASS_NS, then goes on (counted): a
 * closer that never opened must not hang the application. Without the flag
 * both are no-ops. The collector thread closes and opens; it makes no
 * launches itself.
 */
#define GPUFL_LAUNCH_GATE_PASS_NS 2000000000LL
int gpufl__launch_gate_close(gpufl__launch_t *l, int64_t wait_ns);
void gpufl__launch_gate_open(gpufl__launch_t *l);

/* With GPUFL_LAUNCH_ROWS: launches from now on leave notes instead of rows
 * (paused = 1), for the kernel records CUPTI gives while its kernel kind is
 * on to join, or rows again (0). A launch in flight at the switch may get
 * either. Any thread; NULL is ignored. */
void gpufl__launch_pause_rows(gpufl__launch_t *l, int paused);

/* With GPUFL_LAUNCH_ROWS: kernel launches (cuLaunchKernel, its cooperative
 * form, cuLaunchKernelEx) are timed with event pairs from events
 * (kernel_events.h), their rows carrying the pair's handle, stream and
 * shape. Set once, before the callbacks matter; events outlives the module's
 * callbacks. */
struct gpufl__kernel_events;
void gpufl__launch_set_events(gpufl__launch_t *l, struct gpufl__kernel_events *events);

/* The configuration of id (from 1), or NULL; valid until destroy. Collector. */
const gpufl__kernel_config_t *gpufl__launch_config(gpufl__launch_t *l, uint32_t id);

/* Marks the driver calls the calling thread makes from now on (on = 1)
 * until the matching call with on = 0 as gpufl's own: the callbacks ignore
 * them (the SassMetrics engine's cuCtxSynchronize at the end, say). */
void gpufl__launch_internal(int on);

#endif
