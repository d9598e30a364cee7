// SPDX-License-Identifier: Apache-2.0
/*
 * sass_log.c - sampled functions' SASS as `sass` records (see sass_log.h):
 * a list of kept cubins, a queue of wanted functions for the worker, a
 * queue of finished ones for the collector.
 */
#include "nvidia/sass_log.h"

#include "core/clock.h"
#include "core/wire_engines.h"
#include "util/error.h"
#include "util/idmap.h"
#include "util/log.h"
#include "nvidia/sass.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RECORD_INSTRUCTIONS_MAX 16384 /* a longer function's record is cut (`truncated`) */
#define WORKERS                 3     /* nvdisasm runs at once, at most */
#define BATCH_MAX               64    /* functions of one module per nvdisasm run */

typedef struct cubin {
    struct cubin *next;
    uint64_t crc;
    unsigned char *bytes; /* NULL when over the cap */
    size_t size;
    char error[200]; /* why there are no bytes */
} cubin_t;

typedef struct job {
    struct job *next;
    uint64_t crc;
    char *function;
    uint32_t function_id;
    gpufl__sass_module_t *module; /* set by the worker; NULL with error */
    int owns_module;             /* the first job of a batch frees the batch's module */
    const gpufl__sass_function_t *fn;
    char error[240];
} job_t;

struct gpufl__sass_log {
    gpufl__collector_t *collector;
    char nvdisasm[4096];
    size_t cap, kept;
    pthread_mutex_t lock;
    pthread_cond_t wake, done_cond;
    pthread_t workers[WORKERS];
    int worker_count, stopping, busy;
    int cancelled; /* finish ended the runs in progress */
    cubin_t *cubins;
    job_t *todo, **todo_tail, *done, **done_tail;
    gpufl__idmap_t wanted; /* (crc, function id) already asked for */
    gpufl__sass_log_stats_t stats;
};

int gpufl__sass_log_create(gpufl__sass_log_t **out, gpufl__collector_t *collector,
                           size_t cubin_cap_bytes, char *why, size_t why_size) {
    *out = NULL;
    gpufl__sass_log_t *s = calloc(1, sizeof *s);
    if (s == NULL) {
        snprintf(why, why_size, "out of memory");
        return GPUFL_ENOMEM;
    }
    int rc = gpufl__sass_find_nvdisasm(s->nvdisasm, sizeof s->nvdisasm, why, why_size);
    if (rc != 0) {
        free(s);
        return rc;
    }
    s->collector = collector;
    s->cap = cubin_cap_bytes;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->wake, NULL);
    pthread_cond_init(&s->done_cond, NULL);
    s->todo_tail = &s->todo;
    s->done_tail = &s->done;
    gpufl__idmap_init(&s->wanted);
    *out = s;
    return 0;
}

static void free_jobs(job_t *j) {
    while (j) {
        job_t *next = j->next;
        if (j->owns_module) gpufl__sass_module_free(j->module);
        free(j->function);
        free(j);
        j = next;
    }
}

void gpufl__sass_log_destroy(gpufl__sass_log_t *s) {
    if (s == NULL) return;
    pthread_mutex_lock(&s->lock);
    s->stopping = 1;
    if (s->busy) gpufl__sass_cancel_running(); /* the join below then takes ~0.1 s */
    pthread_cond_broadcast(&s->wake);
    pthread_mutex_unlock(&s->lock);
    for (int i = 0; i < s->worker_count; i++) pthread_join(s->workers[i], NULL);
    free_jobs(s->todo);
    free_jobs(s->done);
    for (cubin_t *c = s->cubins, *next; c; c = next) {
        next = c->next;
        free(c->bytes);
        free(c);
    }
    gpufl__idmap_fini(&s->wanted);
    pthread_cond_destroy(&s->wake);
    pthread_cond_destroy(&s->done_cond);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static cubin_t *find_cubin(gpufl__sass_log_t *s, uint64_t crc) {
    for (cubin_t *c = s->cubins; c; c = c->next)
        if (c->crc == crc) return c;
    return NULL;
}

void gpufl__sass_log_add_cubin(gpufl__sass_log_t *s, uint64_t crc, const void *cubin, size_t size) {
    if (s == NULL || cubin == NULL || size == 0) return;
    pthread_mutex_lock(&s->lock);
    if (find_cubin(s, crc) != NULL) {
        pthread_mutex_unlock(&s->lock);
        return;
    }
    cubin_t *c = calloc(1, sizeof *c);
    if (c != NULL) {
        c->crc = crc;
        c->size = size;
        if (s->kept + size > s->cap) {
            s->stats.cubins_over_cap++;
            snprintf(c->error, sizeof c->error,
                     "its module's cubin was not kept: past the cap of %zu MiB on kept cubins",
                     s->cap >> 20);
        } else if ((c->bytes = malloc(size)) == NULL) {
            snprintf(c->error, sizeof c->error, "out of memory for its module's cubin");
        } else {
            memcpy(c->bytes, cubin, size);
            s->kept += size;
            s->stats.cubins++;
            s->stats.cubin_bytes += size;
        }
        c->next = s->cubins;
        s->cubins = c;
    }
    pthread_mutex_unlock(&s->lock);
}

int gpufl__sass_log_symbol_name(gpufl__sass_log_t *s, uint64_t crc, uint32_t index, char *out,
                                size_t size) {
    if (s == NULL || out == NULL || size == 0) return GPUFL_ENOTFOUND;
    pthread_mutex_lock(&s->lock);
    cubin_t *c = find_cubin(s, crc);
    const char *name = c && c->bytes ? gpufl__sass_symbol_name(c->bytes, c->size, index) : NULL;
    int rc = name != NULL && strlen(name) < size ? 0 : GPUFL_ENOTFOUND;
    if (rc == 0) memcpy(out, name, strlen(name) + 1);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* Worker, lock held on entry and exit: the SASS of a batch of functions of
 * one module (nvdisasm restricted to their symbols: a library module of
 * thousands of kernels takes nvdisasm minutes whole), the lock released
 * while nvdisasm runs. */
static void resolve(gpufl__sass_log_t *s, job_t **batch, size_t n) {
    cubin_t *c = find_cubin(s, batch[0]->crc);
    const char *error = NULL;
    if (c == NULL)
        error = "its module was loaded before the engine started: the cubin was not captured";
    else if (c->bytes == NULL)
        error = c->error[0] ? c->error : "no cubin kept";
    if (error != NULL) {
        for (size_t i = 0; i < n; i++)
            snprintf(batch[i]->error, sizeof batch[i]->error, "%s", error);
        return;
    }
    const unsigned char *bytes = c->bytes; /* kept until destroy */
    size_t size = c->size;
    const char *names[BATCH_MAX];
    for (size_t i = 0; i < n; i++) names[i] = batch[i]->function;
    pthread_mutex_unlock(&s->lock);
    gpufl__sass_module_t *m = NULL;
    char why[200] = "";
    int rc =
        gpufl__sass_disassemble_functions(&m, s->nvdisasm, bytes, size, names, n, why, sizeof why);
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < n; i++) {
        job_t *j = batch[i];
        if (rc != 0) {
            if (s->cancelled)
                snprintf(j->error, sizeof j->error,
                         "disassembly had not finished when the session ended");
            else
                snprintf(j->error, sizeof j->error, "nvdisasm: %.200s", why);
            continue;
        }
        j->module = m;
        j->owns_module = i == 0;
        j->fn = gpufl__sass_find_function(m, j->function);
        if (j->fn == NULL)
            snprintf(j->error, sizeof j->error, "nvdisasm's output has no function %.160s",
                     j->function);
    }
}

/* Lock held: takes the first waiting job and the others of its module. */
static size_t take_batch(gpufl__sass_log_t *s, job_t **batch) {
    size_t n = 0;
    uint64_t crc = s->todo->crc;
    for (job_t **at = &s->todo; *at != NULL && n < BATCH_MAX;) {
        job_t *j = *at;
        if (j->crc != crc) {
            at = &j->next;
            continue;
        }
        *at = j->next;
        j->next = NULL;
        batch[n++] = j;
    }
    s->todo_tail = &s->todo;
    while (*s->todo_tail != NULL) s->todo_tail = &(*s->todo_tail)->next;
    return n;
}

static void *worker_main(void *arg) {
    gpufl__sass_log_t *s = arg;
    job_t *batch[BATCH_MAX];
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (s->todo == NULL && !s->stopping) pthread_cond_wait(&s->wake, &s->lock);
        if (s->stopping) break;
        size_t n = take_batch(s, batch);
        s->busy++;
        resolve(s, batch, n);
        s->busy--;
        for (size_t i = 0; i < n; i++) { /* the batch stays together: its module is shared */
            *s->done_tail = batch[i];
            s->done_tail = &batch[i]->next;
        }
        pthread_cond_broadcast(&s->done_cond);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

void gpufl__sass_log_want(gpufl__sass_log_t *s, uint64_t crc, const char *function,
                          uint32_t function_id) {
    if (s == NULL || function == NULL) return;
    uint64_t key = (crc * 0x9e3779b97f4a7c15ull) ^ function_id;
    if (gpufl__idmap_put(&s->wanted, key ? key : 1, 1, NULL) != 0) return; /* asked before */
    job_t *j = calloc(1, sizeof *j);
    if (j == NULL || (j->function = strdup(function)) == NULL) {
        free(j);
        return;
    }
    j->crc = crc;
    j->function_id = function_id;
    pthread_mutex_lock(&s->lock);
    while (s->worker_count < WORKERS && !s->stopping &&
           pthread_create(&s->workers[s->worker_count], NULL, worker_main, s) == 0)
        s->worker_count++;
    if (s->worker_count == 0)
        snprintf(j->error, sizeof j->error, "cannot start the disassembly threads");
    if (s->worker_count > 0) {
        *s->todo_tail = j;
        s->todo_tail = &j->next;
        pthread_cond_signal(&s->wake);
    } else {
        *s->done_tail = j; /* written with its error */
        s->done_tail = &j->next;
    }
    pthread_mutex_unlock(&s->lock);
}

/* The instructions of a function as the record lists them, its files
 * renumbered from 0 in order of use. Fills r; 0, or -1 out of memory. */
static int describe(gpufl__wire_sass_t *r, const job_t *j, const char **files,
                    gpufl__wire_instruction_t *out) {
    const gpufl__sass_function_t *fn = j->fn;
    size_t nfiles = j->module->file_count;
    int32_t *local = nfiles ? malloc(nfiles * sizeof *local) : NULL;
    if (nfiles && !local) return -1;
    for (size_t k = 0; k < nfiles; k++) local[k] = -1;
    r->count = fn->instruction_count < RECORD_INSTRUCTIONS_MAX ? fn->instruction_count
                                                               : RECORD_INSTRUCTIONS_MAX;
    r->truncated = r->count < fn->instruction_count;
    r->files = (gpufl__wire_names_t){files, 0};
    for (size_t i = 0; i < r->count; i++) {
        const gpufl__sass_instruction_t *in = &fn->instructions[i];
        int32_t file = in->file;
        int known = file >= 0 && (size_t)file < nfiles;
        if (known && local[file] < 0) {
            local[file] = r->files.count;
            files[r->files.count++] = j->module->files[file];
        }
        out[i] = (gpufl__wire_instruction_t){in->offset_bytes, in->text, known ? local[file] : -1,
                                             in->line};
    }
    r->instructions = out;
    free(local);
    return 0;
}

/* One `sass` record. */
static void write_record(gpufl__sass_log_t *s, const job_t *j) {
    gpufl__intern_t *dict = (gpufl__intern_t *)gpufl__collector_dict(s->collector);
    char crc[24];
    snprintf(crc, sizeof crc, "0x%016llx", (unsigned long long)j->crc);
    gpufl__wire_sass_t r = {.cubin = gpufl__intern(dict, crc, strlen(crc)),
                            .function = j->function_id};
    const char **files = NULL;
    gpufl__wire_instruction_t *in = NULL;
    if (j->fn == NULL) {
        r.error = j->error[0] ? j->error : "not disassembled";
    } else {
        r.arch = j->module->arch[0] ? j->module->arch : "sm_unknown";
        size_t n = j->fn->instruction_count < RECORD_INSTRUCTIONS_MAX ? j->fn->instruction_count
                                                                      : RECORD_INSTRUCTIONS_MAX;
        files = malloc((j->module->file_count ? j->module->file_count : 1) * sizeof *files);
        in = malloc((n ? n : 1) * sizeof *in);
        if (!files || !in || describe(&r, j, files, in) != 0)
            r.error = "out of memory for the record";
    }
    gpufl__line_t l;
    gpufl__wire_sass(&l, &r);
    gpufl__collector_record(s->collector, GPUFL_FILE_DEVICE, &l);
    free(files);
    free(in);
    if (r.error)
        s->stats.errors++;
    else
        s->stats.records++;
}

/* Takes the finished jobs and writes them. */
static void write_done(gpufl__sass_log_t *s, job_t *extra) {
    pthread_mutex_lock(&s->lock);
    job_t *done = s->done;
    s->done = NULL;
    s->done_tail = &s->done;
    pthread_mutex_unlock(&s->lock);
    if (done == NULL && extra == NULL) return;
    for (job_t *j = done; j; j = j->next) write_record(s, j);
    for (job_t *j = extra; j; j = j->next) write_record(s, j);
    free_jobs(done);
}

void gpufl__sass_log_write(gpufl__sass_log_t *s) {
    if (s != NULL) write_done(s, NULL);
}

void gpufl__sass_log_finish(gpufl__sass_log_t *s, int64_t wait_ns) {
    if (s == NULL) return;
    int64_t deadline = gpufl__mono_ns() + wait_ns;
    pthread_mutex_lock(&s->lock);
    while ((s->todo != NULL || s->busy) && gpufl__mono_ns() < deadline) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 50 * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&s->done_cond, &s->lock, &until);
    }
    job_t *left = s->todo; /* the worker has not reached these */
    s->todo = NULL;
    s->todo_tail = &s->todo;
    for (job_t *j = left; j; j = j->next)
        snprintf(j->error, sizeof j->error, "disassembly had not finished when the session ended");
    int cancelled = s->busy > 0;
    if (cancelled) {
        /* Runs still going are ended; their functions come back with the
         * reason and are written below. */
        s->cancelled = 1;
        gpufl__sass_cancel_running();
        int64_t until = gpufl__mono_ns() + 2 * 1000000000LL;
        while (s->busy && gpufl__mono_ns() < until) {
            struct timespec t;
            clock_gettime(CLOCK_REALTIME, &t);
            t.tv_nsec += 50 * 1000000L;
            if (t.tv_nsec >= 1000000000L) t.tv_sec++, t.tv_nsec -= 1000000000L;
            pthread_cond_timedwait(&s->done_cond, &s->lock, &t);
        }
    }
    pthread_mutex_unlock(&s->lock);
    write_done(s, left);
    if (left || cancelled)
        gpufl__warn("SASS: disassembly had not finished at session end; those functions' sass "
                    "records say so");
    free_jobs(left);
}

void gpufl__sass_log_stats(gpufl__sass_log_stats_t *out, gpufl__sass_log_t *s) {
    memset(out, 0, sizeof *out);
    if (s == NULL) return;
    pthread_mutex_lock(&s->lock);
    *out = s->stats;
    pthread_mutex_unlock(&s->lock);
}
