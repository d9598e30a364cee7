// SPDX-License-Identifier: Apache-2.0
/*
 * routes_fleet.c - the fleet views of one workspace: hosts seen, every GPU by uuid with its
 * latest readings (the gpu_info lines and the newest gpu_sample row of each session's device),
 * and sessions grouped by job id (the header's job_id) with their kernels' GPU time.
 */
#include "server.h"

#include <gpufl/gpufl.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FLEET_ROWS_MAX 10000 /* rows one fleet answer lists; past it "truncated": true */

/* Query rows into JSON objects; types[k] is 'i' (integer) or 's' (text) for column k. */
typedef struct collect {
    json_t *list;
    const char *types;
    int truncated;
} collect_t;

static int collect_row(void *arg, int n, const char *const *v, const char *const *names) {
    collect_t *c = arg;
    if (json_array_size(c->list) >= FLEET_ROWS_MAX) {
        c->truncated = 1;
        return 0;
    }
    json_t *o = json_object();
    for (int k = 0; k < n && c->types[k]; k++) {
        json_t *val = !v[k]                ? json_null()
                      : c->types[k] == 'i' ? json_integer((json_int_t)strtoll(v[k], NULL, 10))
                                           : json_string(v[k]);
        json_object_set_new(o, names[k], val ? val : json_null());
    }
    json_array_append_new(c->list, o);
    return 0;
}

static int collect(gpufl__request_t *req, collect_t *c, const char *sql, const char *types) {
    char ws[32];
    snprintf(ws, sizeof ws, "%" PRId64, req->who.workspace_id);
    const char *p[] = {ws};
    c->list = json_array();
    c->types = types;
    c->truncated = 0;
    gpufl__server_t *s = req->server;
    return s->ops->query(s->store, sql, p, 1, collect_row, c);
}

static void answer(gpufl__reply_t *rep, int rc, const char *key, collect_t *c) {
    if (rc != 0) {
        json_decref(c->list);
        gpufl__reply_error(rep, gpufl__store_status(rc), "the fleet view could not be read");
        return;
    }
    rep->status = 200;
    rep->json = json_pack("{s:o,s:b}", key, c->list, "truncated", c->truncated);
}

/* Every GPU by uuid: each session's gpu_info lines, joined in C with the newest gpu_sample row
 * of that session's device; a uuid seen in several sessions keeps the newest reading. */
static int gpus_of(gpufl__request_t *req, json_t **out, int *truncated) {
    collect_t info, latest;
    int rc = collect(req, &info,
                     "SELECT s.session_id, s.hostname, s.epoch_unix_us, l.body FROM lines l JOIN "
                     "sessions s ON s.workspace_id = l.workspace_id AND s.session_id = "
                     "l.session_id WHERE l.workspace_id = ? AND l.type = 'gpu_info'",
                     "ssis");
    if (rc == 0)
        rc = collect(req, &latest,
                     "SELECT g.session_id, g.device, g.ts_ns, g.gpu_util_pct, g.mem_util_pct, "
                     "g.mem_used_bytes, g.mem_total_bytes, g.temp_gpu_c, g.power_mw, "
                     "g.clock_sm_mhz, g.throttle_reasons FROM gpu_sample g WHERE g.workspace_id "
                     "= ? AND g.ts_ns = (SELECT MAX(h.ts_ns) FROM gpu_sample h WHERE "
                     "h.workspace_id = g.workspace_id AND h.session_id = g.session_id AND "
                     "h.device = g.device)",
                     "siiiiiiiiii");
    else
        latest.list = NULL;
    if (rc != 0) {
        json_decref(info.list);
        json_decref(latest.list);
        return rc;
    }
    json_t *by_uuid = json_object();
    size_t i;
    json_t *row;
    json_array_foreach(info.list, i, row) {
        json_t *doc = json_loads(json_string_value(json_object_get(row, "body")), 0, NULL);
        const char *uuid = json_string_value(json_object_get(doc, "uuid"));
        const char *sid = json_string_value(json_object_get(row, "session_id"));
        json_int_t device = json_integer_value(json_object_get(doc, "device"));
        json_int_t epoch = json_integer_value(json_object_get(row, "epoch_unix_us"));
        if (!uuid || !sid) {
            json_decref(doc);
            continue;
        }
        json_t *reading = NULL;
        size_t j;
        json_t *s;
        json_array_foreach(latest.list, j, s) {
            if (!strcmp(json_string_value(json_object_get(s, "session_id")), sid) &&
                json_integer_value(json_object_get(s, "device")) == device)
                reading = s;
        }
        json_int_t at =
            reading ? epoch + json_integer_value(json_object_get(reading, "ts_ns")) / 1000 : -1;
        json_t *have = json_object_get(by_uuid, uuid);
        if (have && json_integer_value(json_object_get(have, "as_of_unix_us")) >= at) {
            json_decref(doc);
            continue;
        }
        json_t *gpu = json_pack("{s:s,s:O?,s:O?,s:s,s:I,s:O?}", "uuid", uuid, "name",
                                json_object_get(doc, "name"), "hostname",
                                json_object_get(row, "hostname"), "session_id", sid, "device",
                                device, "mem_total_bytes", json_object_get(doc, "mem_total_bytes"));
        if (gpu && reading) {
            json_t *r = json_deep_copy(reading);
            json_object_del(r, "session_id");
            json_object_del(r, "device");
            json_object_set_new(gpu, "latest", r);
            json_object_set_new(gpu, "as_of_unix_us", json_integer(at));
        } else if (gpu) {
            json_object_set_new(gpu, "latest", json_null());
            json_object_set_new(gpu, "as_of_unix_us", json_integer(-1));
        }
        if (gpu) json_object_set_new(by_uuid, uuid, gpu);
        json_decref(doc);
    }
    *truncated = info.truncated || latest.truncated;
    json_decref(info.list);
    json_decref(latest.list);
    json_t *list = json_array();
    const char *uuid;
    json_t *gpu;
    json_object_foreach(by_uuid, uuid, gpu) json_array_append(list, gpu);
    json_decref(by_uuid);
    *out = list;
    return 0;
}

void gpufl__fleet_gpus(gpufl__request_t *req, gpufl__reply_t *rep) {
    json_t *list;
    int truncated = 0;
    int rc = gpus_of(req, &list, &truncated);
    if (rc != 0) {
        gpufl__reply_error(rep, gpufl__store_status(rc), "the fleet view could not be read");
        return;
    }
    rep->status = 200;
    rep->json = json_pack("{s:o,s:b}", "gpus", list, "truncated", truncated);
}

void gpufl__fleet_hosts(gpufl__request_t *req, gpufl__reply_t *rep) {
    collect_t c;
    int rc = collect(req, &c,
                     "SELECT hostname, COUNT(*) AS sessions, MAX(last_window_at) AS "
                     "last_seen_unix_s FROM sessions WHERE workspace_id = ? AND hostname IS NOT "
                     "NULL GROUP BY hostname ORDER BY hostname",
                     "sii");
    json_t *gpus = NULL;
    int truncated = 0;
    if (rc == 0) rc = gpus_of(req, &gpus, &truncated);
    if (rc == 0) {
        size_t i, j;
        json_t *host, *gpu;
        json_array_foreach(c.list, i, host) {
            const char *name = json_string_value(json_object_get(host, "hostname"));
            json_int_t n = 0;
            json_array_foreach(gpus, j, gpu) {
                const char *h = json_string_value(json_object_get(gpu, "hostname"));
                n += h && name && !strcmp(h, name);
            }
            json_object_set_new(host, "gpus", json_integer(n));
        }
    }
    json_decref(gpus);
    answer(rep, rc, "hosts", &c);
}

void gpufl__fleet_jobs(gpufl__request_t *req, gpufl__reply_t *rep) {
    collect_t c, hosts, gpu;
    int rc = collect(req, &c,
                     "SELECT job_id, COUNT(*) AS sessions, MIN(epoch_unix_us) AS "
                     "first_start_unix_us, MAX(last_window_at) AS last_seen_unix_s FROM sessions "
                     "WHERE workspace_id = ? AND job_id IS NOT NULL GROUP BY job_id ORDER BY "
                     "job_id",
                     "siii");
    hosts.list = gpu.list = NULL;
    if (rc == 0)
        rc = collect(req, &hosts,
                     "SELECT DISTINCT job_id, hostname FROM sessions WHERE workspace_id = ? AND "
                     "job_id IS NOT NULL AND hostname IS NOT NULL ORDER BY job_id, hostname",
                     "ss");
    if (rc == 0)
        rc = collect(req, &gpu,
                     "SELECT s.job_id, SUM(a.end_ns - a.start_ns) AS gpu_time_ns, COUNT(*) AS "
                     "kernels FROM activity a JOIN sessions s ON s.workspace_id = a.workspace_id "
                     "AND s.session_id = a.session_id WHERE a.workspace_id = ? AND s.job_id IS "
                     "NOT NULL AND a.kind = 'kernel' GROUP BY s.job_id",
                     "sii");
    if (rc == 0) {
        size_t i, j;
        json_t *job, *r;
        json_array_foreach(c.list, i, job) {
            const char *id = json_string_value(json_object_get(job, "job_id"));
            json_t *names = json_array();
            json_int_t ns = 0, kernels = 0;
            json_array_foreach(hosts.list, j, r) {
                if (!strcmp(json_string_value(json_object_get(r, "job_id")), id))
                    json_array_append(names, json_object_get(r, "hostname"));
            }
            json_array_foreach(gpu.list, j, r) {
                if (!strcmp(json_string_value(json_object_get(r, "job_id")), id)) {
                    ns = json_integer_value(json_object_get(r, "gpu_time_ns"));
                    kernels = json_integer_value(json_object_get(r, "kernels"));
                }
            }
            json_object_set_new(job, "hosts", names);
            json_object_set_new(job, "gpu_time_ns", json_integer(ns));
            json_object_set_new(job, "kernels", json_integer(kernels));
        }
        c.truncated |= hosts.truncated || gpu.truncated;
    }
    json_decref(hosts.list);
    json_decref(gpu.list);
    answer(rep, rc, "jobs", &c);
}
