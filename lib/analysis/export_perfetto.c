// SPDX-License-Identifier: Apache-2.0
/*
 * export_perfetto.c - the timeline as a native Perfetto trace: a protobuf
 * `Trace` whose packets are TrackDescriptors (the process, its threads, one
 * track per GPU stream lane, counter tracks) and TrackEvents (slice begin and
 * end, counter values, flow ids from launch to kernel), all on one packet
 * sequence whose event and argument names are interned.
 *
 * Encoded by hand (export_pb.c). The field numbers below come from the
 * public proto definitions in github.com/google/perfetto, protos/perfetto/:
 *
 *   trace/trace.proto                   Trace.packet = 1
 *   trace/trace_packet.proto            TracePacket.timestamp = 8,
 *                                       trusted_packet_sequence_id = 10,
 *                                       track_event = 11, interned_data = 12,
 *                                       sequence_flags = 13, track_descriptor = 60;
 *                                       SEQ_INCREMENTAL_STATE_CLEARED = 1,
 *                                       SEQ_NEEDS_INCREMENTAL_STATE = 2
 *   trace/track_event/track_descriptor.proto
 *                                       TrackDescriptor.uuid = 1, name = 2, process = 3,
 *                                       thread = 4, parent_uuid = 5, counter = 8
 *   trace/track_event/process_descriptor.proto
 *                                       ProcessDescriptor.pid = 1, process_name = 6
 *   trace/track_event/thread_descriptor.proto
 *                                       ThreadDescriptor.pid = 1, tid = 2, thread_name = 5
 *   trace/track_event/counter_descriptor.proto
 *                                       CounterDescriptor.unit = 3; UNIT_SIZE_BYTES = 3
 *   trace/track_event/track_event.proto TrackEvent.debug_annotations = 4, type = 9,
 *                                       name_iid = 10, track_uuid = 11, name = 23,
 *                                       counter_value = 30, double_counter_value = 44,
 *                                       flow_ids = 47 (fixed64),
 *                                       terminating_flow_ids = 48 (fixed64);
 *                                       TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2,
 *                                       TYPE_INSTANT = 3, TYPE_COUNTER = 4; EventName.iid = 1,
 *                                       name = 2
 *   trace/track_event/debug_annotation.proto
 *                                       DebugAnnotation.name_iid = 1, int_value = 4,
 *                                       double_value = 5, string_value = 6, name = 10;
 *                                       DebugAnnotationName.iid = 1, name = 2
 *   trace/interned_data/interned_data.proto
 *                                       InternedData.event_names = 2,
 *                                       debug_annotation_names = 3
 *
 * Events are written in time order; a slice's end comes from a heap of open
 * slices, so that at one timestamp ends precede begins and inner slices
 * close before outer ones.
 */
#include "analysis/export_pb.h"
#include "analysis/export_timeline.h"

#include "util/error.h"
#include "util/intern.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum {
    F_TRACE_PACKET = 1,
    F_PACKET_TIMESTAMP = 8,
    F_PACKET_SEQUENCE_ID = 10,
    F_PACKET_TRACK_EVENT = 11,
    F_PACKET_INTERNED_DATA = 12,
    F_PACKET_SEQUENCE_FLAGS = 13,
    F_PACKET_TRACK_DESCRIPTOR = 60,
    F_TRACK_UUID = 1,
    F_TRACK_NAME = 2,
    F_TRACK_PROCESS = 3,
    F_TRACK_THREAD = 4,
    F_TRACK_PARENT_UUID = 5,
    F_TRACK_COUNTER = 8,
    F_PROCESS_PID = 1,
    F_PROCESS_NAME = 6,
    F_THREAD_PID = 1,
    F_THREAD_TID = 2,
    F_THREAD_NAME = 5,
    F_COUNTER_UNIT = 3,
    F_EVENT_DEBUG_ANNOTATIONS = 4,
    F_EVENT_TYPE = 9,
    F_EVENT_NAME_IID = 10,
    F_EVENT_TRACK_UUID = 11,
    F_EVENT_NAME = 23,
    F_EVENT_COUNTER_VALUE = 30,
    F_EVENT_DOUBLE_COUNTER_VALUE = 44,
    F_EVENT_FLOW_IDS = 47,
    F_EVENT_TERMINATING_FLOW_IDS = 48,
    F_ANNOTATION_NAME_IID = 1,
    F_ANNOTATION_INT = 4,
    F_ANNOTATION_DOUBLE = 5,
    F_ANNOTATION_STRING = 6,
    F_ANNOTATION_NAME = 10,
    F_INTERNED_EVENT_NAMES = 2,
    F_INTERNED_ANNOTATION_NAMES = 3,
    F_INTERNED_IID = 1,
    F_INTERNED_NAME = 2
};

enum { SEQ_INCREMENTAL_STATE_CLEARED = 1, SEQ_NEEDS_INCREMENTAL_STATE = 2 };
enum { TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4 };
enum { UNIT_SIZE_BYTES = 3 };

#define SEQUENCE_ID   1
#define PROCESS_UUID  1
#define TRACK_UUID(i) ((uint64_t)(i) + 2)
/* Strings are cut here (on a character boundary). */
#define STRING_MAX_BYTES (64u << 10)
#define FLUSH_BYTES      (1u << 20)
#define BUF_MAX_BYTES    ((size_t)64 << 20)
/* Distinct names interned; past it names are written in full. */
#define INTERN_MAX_STRINGS (16u << 20)
#define INTERN_MAX_BYTES   ((size_t)1 << 30)
/* Argument names new in one packet (the fixed keys of export_timeline.c). */
#define NEW_KEYS_MAX 32

typedef struct open_end {
    int64_t end_ns;
    uint32_t track;
    uint8_t depth;
} open_end_t;

typedef struct perfetto {
    const gpufl__export_timeline_t *tl;
    const gpufl_export_options_t *opt;
    gpufl_export_result_t *res;
    gpufl__pb_t pb;
    FILE *f;
    const char *path;
    int64_t shift_ns; /* added to every time: Perfetto's are unsigned */
    gpufl__intern_t *names, *keys;
    uint32_t new_name; /* iid of a name new in this packet, or 0 */
    const char *new_name_str;
    uint32_t new_keys[NEW_KEYS_MAX];
    const char *new_key_str[NEW_KEYS_MAX];
    int n_new_keys;
    open_end_t *heap;
    size_t n_heap, heap_cap;
    int failed;
} perfetto_t;

static int flush(perfetto_t *p) {
    if (p->failed) return -1;
    if (p->pb.buf.overflow || p->pb.error) {
        p->failed = 1;
        return gpufl__set_error(GPUFL_ENOMEM, "export: a packet of '%s' passes %zu bytes", p->path,
                                BUF_MAX_BYTES);
    }
    if (p->pb.buf.len && fwrite(p->pb.buf.data, 1, p->pb.buf.len, p->f) != p->pb.buf.len) {
        p->failed = 1;
        return gpufl__set_error(GPUFL_EIO, "cannot write '%s': %s", p->path, strerror(errno));
    }
    p->res->bytes += p->pb.buf.len;
    p->pb.buf.len = 0;
    return 0;
}

static void packet_open(perfetto_t *p, int flags) {
    gpufl__pb_begin(&p->pb, F_TRACE_PACKET);
    gpufl__pb_varint(&p->pb, F_PACKET_SEQUENCE_ID, SEQUENCE_ID);
    if (flags) gpufl__pb_varint(&p->pb, F_PACKET_SEQUENCE_FLAGS, (uint64_t)flags);
    p->res->events++;
}

/* The iid of s in table t (new ones noted in *is_new), or 0 when t is full. */
static uint32_t intern(gpufl__intern_t *t, const char *s, int *is_new) {
    uint32_t before = gpufl__intern_count(t);
    uint64_t full = gpufl__intern_overflows(t);
    size_t n = strlen(s);
    if (n > STRING_MAX_BYTES) n = STRING_MAX_BYTES; /* the same cut as written */
    uint32_t id = gpufl__intern(t, s, n);
    if (gpufl__intern_overflows(t) != full) return 0;
    *is_new = gpufl__intern_count(t) != before;
    return id;
}

static void put_key(perfetto_t *p, const char *key) {
    int is_new = 0;
    uint32_t iid = intern(p->keys, key, &is_new);
    gpufl__pb_begin(&p->pb, F_EVENT_DEBUG_ANNOTATIONS);
    if (iid == 0) {
        gpufl__pb_string(&p->pb, F_ANNOTATION_NAME, key, STRING_MAX_BYTES);
        return;
    }
    gpufl__pb_varint(&p->pb, F_ANNOTATION_NAME_IID, iid);
    if (is_new && p->n_new_keys < NEW_KEYS_MAX) {
        p->new_keys[p->n_new_keys] = iid;
        p->new_key_str[p->n_new_keys++] = key;
    }
}

static void arg_str(void *user, const char *key, const char *v) {
    perfetto_t *p = user;
    put_key(p, key);
    gpufl__pb_string(&p->pb, F_ANNOTATION_STRING, v, STRING_MAX_BYTES);
    gpufl__pb_end(&p->pb);
}
static void arg_i64(void *user, const char *key, int64_t v) {
    perfetto_t *p = user;
    put_key(p, key);
    gpufl__pb_varint(&p->pb, F_ANNOTATION_INT, (uint64_t)v);
    gpufl__pb_end(&p->pb);
}
static void arg_dbl(void *user, const char *key, double v) {
    perfetto_t *p = user;
    put_key(p, key);
    gpufl__pb_double(&p->pb, F_ANNOTATION_DOUBLE, v);
    gpufl__pb_end(&p->pb);
}

/* The names first used in this packet, as its interned_data. */
static void put_interned(perfetto_t *p) {
    if (!p->new_name && !p->n_new_keys) return;
    gpufl__pb_begin(&p->pb, F_PACKET_INTERNED_DATA);
    if (p->new_name) {
        gpufl__pb_begin(&p->pb, F_INTERNED_EVENT_NAMES);
        gpufl__pb_varint(&p->pb, F_INTERNED_IID, p->new_name);
        gpufl__pb_string(&p->pb, F_INTERNED_NAME, p->new_name_str, STRING_MAX_BYTES);
        gpufl__pb_end(&p->pb);
    }
    for (int i = 0; i < p->n_new_keys; i++) {
        gpufl__pb_begin(&p->pb, F_INTERNED_ANNOTATION_NAMES);
        gpufl__pb_varint(&p->pb, F_INTERNED_IID, p->new_keys[i]);
        gpufl__pb_string(&p->pb, F_INTERNED_NAME, p->new_key_str[i], STRING_MAX_BYTES);
        gpufl__pb_end(&p->pb);
    }
    gpufl__pb_end(&p->pb);
    p->new_name = 0;
    p->n_new_keys = 0;
}

static void put_descriptors(perfetto_t *p) {
    const gpufl__export_timeline_t *tl = p->tl;
    packet_open(p, SEQ_INCREMENTAL_STATE_CLEARED);
    gpufl__pb_begin(&p->pb, F_PACKET_TRACK_DESCRIPTOR);
    gpufl__pb_varint(&p->pb, F_TRACK_UUID, PROCESS_UUID);
    gpufl__pb_begin(&p->pb, F_TRACK_PROCESS);
    if (tl->pid > 0) gpufl__pb_varint(&p->pb, F_PROCESS_PID, (uint64_t)tl->pid);
    gpufl__pb_string(&p->pb, F_PROCESS_NAME, tl->process_name, STRING_MAX_BYTES);
    gpufl__pb_end(&p->pb);
    gpufl__pb_end(&p->pb);
    gpufl__pb_end(&p->pb);
    for (size_t i = 0; i < tl->n_tracks; i++) {
        const gpufl__export_track_t *t = &tl->tracks[i];
        packet_open(p, 0);
        gpufl__pb_begin(&p->pb, F_PACKET_TRACK_DESCRIPTOR);
        gpufl__pb_varint(&p->pb, F_TRACK_UUID, TRACK_UUID(i));
        gpufl__pb_varint(&p->pb, F_TRACK_PARENT_UUID, PROCESS_UUID);
        if (t->kind == GPUFL_EXPORT_TRACK_THREAD && t->tid >= 0 && t->lane == 0) {
            gpufl__pb_begin(&p->pb, F_TRACK_THREAD);
            if (tl->pid > 0) gpufl__pb_varint(&p->pb, F_THREAD_PID, (uint64_t)tl->pid);
            gpufl__pb_varint(&p->pb, F_THREAD_TID, (uint64_t)t->tid);
            gpufl__pb_string(&p->pb, F_THREAD_NAME, t->name, STRING_MAX_BYTES);
            gpufl__pb_end(&p->pb);
        } else {
            gpufl__pb_string(&p->pb, F_TRACK_NAME, t->name, STRING_MAX_BYTES);
        }
        if (t->kind == GPUFL_EXPORT_TRACK_COUNTER) {
            gpufl__pb_begin(&p->pb, F_TRACK_COUNTER);
            if (t->metric_is_bytes) gpufl__pb_varint(&p->pb, F_COUNTER_UNIT, UNIT_SIZE_BYTES);
            gpufl__pb_end(&p->pb);
        }
        gpufl__pb_end(&p->pb);
        gpufl__pb_end(&p->pb);
    }
}

static void event_open(perfetto_t *p, int64_t ts, int type, uint32_t track) {
    packet_open(p, SEQ_NEEDS_INCREMENTAL_STATE);
    gpufl__pb_varint(&p->pb, F_PACKET_TIMESTAMP, (uint64_t)ts + (uint64_t)p->shift_ns);
    gpufl__pb_begin(&p->pb, F_PACKET_TRACK_EVENT);
    gpufl__pb_varint(&p->pb, F_EVENT_TYPE, (uint64_t)type);
    gpufl__pb_varint(&p->pb, F_EVENT_TRACK_UUID, TRACK_UUID(track));
}

static void put_end(perfetto_t *p, const open_end_t *e) {
    event_open(p, e->end_ns, TYPE_SLICE_END, e->track);
    gpufl__pb_end(&p->pb);
    gpufl__pb_end(&p->pb);
}

static void put_row(perfetto_t *p, const gpufl__export_row_t *r) {
    const gpufl__export_timeline_t *tl = p->tl;
    if (r->kind == GPUFL_EXPORT_COUNTER) {
        event_open(p, r->start_ns, TYPE_COUNTER, r->track);
        int64_t iv;
        double dv;
        if (gpufl__export_counter_value(tl, r, &iv, &dv))
            gpufl__pb_double(&p->pb, F_EVENT_DOUBLE_COUNTER_VALUE, dv);
        else
            gpufl__pb_varint(&p->pb, F_EVENT_COUNTER_VALUE, (uint64_t)iv);
        gpufl__pb_end(&p->pb);
        gpufl__pb_end(&p->pb);
        p->res->counters++;
        return;
    }
    int instant = r->kind == GPUFL_EXPORT_LAUNCH_CALL;
    event_open(p, r->start_ns, instant ? TYPE_INSTANT : TYPE_SLICE_BEGIN, r->track);
    const char *name = gpufl__export_row_name(tl, r);
    int is_new = 0;
    uint32_t iid = intern(p->names, name, &is_new);
    if (iid) {
        gpufl__pb_varint(&p->pb, F_EVENT_NAME_IID, iid);
        if (is_new) {
            p->new_name = iid;
            p->new_name_str = name;
        }
    } else {
        gpufl__pb_string(&p->pb, F_EVENT_NAME, name, STRING_MAX_BYTES);
    }
    gpufl__export_args_t sink = {arg_str, arg_i64, arg_dbl, p};
    gpufl__export_row_args(tl, r, &sink);
    if (r->flow) {
        uint64_t id = (uint64_t)r->index + GPUFL_EXPORT_FLOW_BASE;
        if (r->kind == GPUFL_EXPORT_LAUNCH) {
            gpufl__pb_fixed64(&p->pb, F_EVENT_FLOW_IDS, id);
        } else {
            gpufl__pb_fixed64(&p->pb, F_EVENT_TERMINATING_FLOW_IDS, id);
            p->res->flows++;
        }
    }
    gpufl__pb_end(&p->pb);
    put_interned(p);
    gpufl__pb_end(&p->pb);
    if (instant)
        p->res->instants++;
    else
        p->res->slices++;
}

/* Heap of open slices by end, the deeper first at one end. */
static int end_before(const open_end_t *a, const open_end_t *b) {
    if (a->end_ns != b->end_ns) return a->end_ns < b->end_ns;
    if (a->depth != b->depth) return a->depth > b->depth;
    return a->track < b->track;
}

static void heap_push(perfetto_t *p, open_end_t e) {
    size_t i = p->n_heap++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!end_before(&e, &p->heap[parent])) break;
        p->heap[i] = p->heap[parent];
        i = parent;
    }
    p->heap[i] = e;
}

static open_end_t heap_pop(perfetto_t *p) {
    open_end_t top = p->heap[0], last = p->heap[--p->n_heap];
    size_t i = 0, n = p->n_heap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && end_before(&p->heap[c + 1], &p->heap[c])) c++;
        if (!end_before(&p->heap[c], &last)) break;
        p->heap[i] = p->heap[c];
        i = c;
    }
    if (n) p->heap[i] = last;
    return top;
}

static int write_events(perfetto_t *p) {
    const gpufl__export_timeline_t *tl = p->tl;
    put_descriptors(p);
    for (size_t i = 0; i < tl->n_rows; i++) {
        const gpufl__export_row_t *r = &tl->rows[i];
        while (p->n_heap && p->heap[0].end_ns <= r->start_ns) {
            open_end_t e = heap_pop(p);
            put_end(p, &e);
        }
        put_row(p, r);
        if (r->kind != GPUFL_EXPORT_COUNTER && r->kind != GPUFL_EXPORT_LAUNCH_CALL) {
            open_end_t e = {r->end_ns, r->track, r->depth};
            if (r->end_ns == r->start_ns)
                put_end(p, &e);
            else
                heap_push(p, e);
        }
        if (p->pb.buf.len >= FLUSH_BYTES && flush(p)) return -1;
        if (p->opt->progress && (i & 0xffff) == 0)
            p->opt->progress(p->opt->progress_user, (double)i / (double)tl->n_rows);
    }
    while (p->n_heap) {
        open_end_t e = heap_pop(p);
        put_end(p, &e);
        if (p->pb.buf.len >= FLUSH_BYTES && flush(p)) return -1;
    }
    return flush(p);
}

int gpufl__export_perfetto(gpufl_export_result_t *res, const gpufl__export_timeline_t *tl,
                           const gpufl_export_options_t *opt) {
    int to_stream = !opt->path || strcmp(opt->path, "-") == 0;
    perfetto_t p;
    memset(&p, 0, sizeof p);
    p.tl = tl;
    p.opt = opt;
    p.res = res;
    p.path = to_stream ? "<stdout>" : opt->path;
    /* Perfetto's times are unsigned: a log whose times start before 0 is
     * shifted (a damaged one with times near INT64_MIN as far as int64 goes). */
    p.shift_ns = tl->n_rows && tl->rows[0].start_ns < 0
                     ? (tl->rows[0].start_ns == INT64_MIN ? INT64_MAX : -tl->rows[0].start_ns)
                     : 0;
    gpufl__pb_init(&p.pb, BUF_MAX_BYTES);
    p.names = gpufl__intern_create(INTERN_MAX_STRINGS, INTERN_MAX_BYTES);
    p.keys = gpufl__intern_create(1024, 64 << 10);
    p.heap = malloc((tl->n_rows ? tl->n_rows : 1) * sizeof *p.heap);
    int rc = 0;
    if (!p.names || !p.keys || !p.heap) {
        rc = gpufl__set_error(GPUFL_ENOMEM, "export: out of memory");
        goto free_tables;
    }
    if (to_stream) {
        p.f = opt->out ? opt->out : stdout;
    } else {
        p.f = fopen(opt->path, "wb");
        if (!p.f) {
            rc = gpufl__set_error(GPUFL_EIO, "cannot create '%s': %s", opt->path, strerror(errno));
            goto free_tables;
        }
    }
    if (write_events(&p)) rc = p.pb.buf.overflow || p.pb.error ? GPUFL_ENOMEM : GPUFL_EIO;
    if (to_stream) {
        if (rc == 0 && fflush(p.f) != 0)
            rc = gpufl__set_error(GPUFL_EIO, "cannot write to stdout: %s", strerror(errno));
    } else {
        if (fclose(p.f) != 0 && rc == 0)
            rc = gpufl__set_error(GPUFL_EIO, "cannot write '%s': %s", opt->path, strerror(errno));
        if (rc == 0) {
            res->files = malloc(sizeof *res->files);
            if (res->files) res->files[0] = strdup(opt->path);
            if (!res->files || !res->files[0])
                rc = gpufl__set_error(GPUFL_ENOMEM, "export: out of memory");
            else
                res->n_files = 1;
        }
    }
free_tables:
    gpufl__intern_destroy(p.names);
    gpufl__intern_destroy(p.keys);
    free(p.heap);
    gpufl__pb_fini(&p.pb);
    return rc;
}
