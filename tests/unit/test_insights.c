// SPDX-License-Identifier: Apache-2.0
/*
 * test_insights.c - the kernel and device insight rules (rules_kernel.c,
 * rules_device.c) on small sessions generated in a temporary directory:
 * for each rule, a case just above and just below every threshold in
 * docs/insights.md, the evidence, the advice per limiter, the skips when
 * data is missing, and deterministic output.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <gpufl/gpufl.h>

#include "analysis/insight_rules.h"
#include "analysis/insights.h"
#include "analysis/model.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define US  1000LL
#define MS  1000000LL
#define NUL INT64_MIN /* written as null */

#define ASSERT_NEAR(a, b) TU_ASSERT_NEAR(a, b, 1e-6)

/* ---------------------------------------------------------------------- */
/* Writing sessions                                                         */
/* ---------------------------------------------------------------------- */

enum {
    S_NO_INFO = 1,   /* no gpu_info record */
    S_NO_LEGEND = 2, /* no gpu_legend record */
    S_NO_GPM = 4,    /* gpu_info says gpm_supported false */
    S_NO_TRACE = 8,  /* capabilities: cupti_trace off */
    S_EMPTY = 16,    /* device.log holds its header only */
};

typedef struct sess {
    char dir[64];
    FILE *f; /* device.log */
} sess_t;

static void put(sess_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sess_t *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfprintf(s->f, fmt, ap);
    va_end(ap);
}

static sess_t *sess_new(int flags) {
    sess_t *s = calloc(1, sizeof *s);
    assert_non_null(s);
    snprintf(s->dir, sizeof s->dir, "/tmp/gpufl-test-insights-XXXXXX");
    assert_non_null(mkdtemp(s->dir));
    char path[128];
    snprintf(path, sizeof path, "%s/device.log", s->dir);
    s->f = fopen(path, "w");
    assert_non_null(s->f);
    put(s, "{\"type\":\"header\",\"v\":1,\"format\":\"gpufl-log\",\"file\":\"device\","
           "\"segment\":0,\"session_id\":\"20261125T000000.000Z-1-0001\",\"app_name\":\"t\","
           "\"pid\":1,\"hostname\":\"h\",\"epoch_ns\":\"1000\",\"epoch_unix_us\":1,"
           "\"clock\":\"monotonic\",\"gpufl_version\":\"0.1.0\"}\n");
    if (flags & S_EMPTY) return s;
    if (flags & S_NO_TRACE)
        put(s, "{\"type\":\"capabilities\",\"v\":1,\"backend_requested\":\"Auto\","
               "\"backend\":\"Nvidia\",\"engine_requested\":\"Monitor\",\"engine\":\"Monitor\","
               "\"features\":{\"nvml\":{\"on\":true},\"cupti_trace\":{\"on\":false,"
               "\"why\":\"engine Monitor runs no CUPTI\"}}}\n");
    if (!(flags & S_NO_INFO))
        put(s,
            "{\"type\":\"gpu_info\",\"v\":1,\"device\":0,\"nvml_index\":0,\"mig_index\":null,"
            "\"name\":\"NVIDIA H100\",\"uuid\":\"GPU-0\",\"pci_bus_id\":\"0\","
            "\"compute_capability\":\"9.0\",\"sm_count\":132,\"mem_total_bytes\":85520809984,"
            "\"driver_version\":\"580\",\"cuda_driver_version\":13000,\"mig_mode\":0,"
            "\"gpm_supported\":%d,\"nvlink_links\":0,\"power_limit_mw\":700000,"
            "\"nvml_version\":\"13\"}\n",
            flags & S_NO_GPM ? 0 : 1);
    if (!(flags & S_NO_LEGEND))
        put(s, "{\"type\":\"gpu_legend\",\"v\":1,\"throttle_reasons\":{\"0\":\"gpu_idle\","
               "\"1\":\"applications_clocks_setting\",\"2\":\"sw_power_cap\","
               "\"3\":\"hw_slowdown\",\"4\":\"sync_boost\",\"5\":\"sw_thermal_slowdown\","
               "\"6\":\"hw_thermal_slowdown\",\"7\":\"hw_power_brake_slowdown\","
               "\"8\":\"display_clock_setting\"}}\n");
    /* kernel names: 1 mangled -> 2 demangled; 3 and 4 are plain names */
    put(s, "{\"type\":\"dict\",\"v\":1,\"id\":[1,2,3,4],\"str\":[\"_Z6targetPf\","
           "\"target(float*)\",\"filler\",\"tiny\"]}\n");
    return s;
}

static void sess_end(sess_t *s, int64_t duration_ns) {
    put(s,
        "{\"type\":\"session_end\",\"v\":1,\"ts_ns\":%lld,\"duration_ns\":%lld,"
        "\"records_written\":0,\"records_dropped\":0,\"bytes_written\":0,\"write_errors\":0}\n",
        (long long)duration_ns, (long long)duration_ns);
}

static void put_val(sess_t *s, int64_t v) {
    if (v == NUL)
        put(s, "null");
    else
        put(s, "%lld", (long long)v);
}

/* One column of a batch: ,"key":[expr for each row i_] */
#define COL(s, key, n, expr)                                                                       \
    do {                                                                                           \
        put(s, ",\"%s\":[", key);                                                                  \
        for (size_t i_ = 0; i_ < (n); i_++) {                                                      \
            if (i_) put(s, ",");                                                                   \
            put_val(s, (int64_t)(expr));                                                           \
        }                                                                                          \
        put(s, "]");                                                                               \
    } while (0)

typedef struct krow {
    int64_t start, end;
    int64_t name;   /* dict id; 0: 3 ("filler") */
    int64_t grid;   /* grid_x; 0: 1024 */
    int64_t regs;   /* 0: 32 */
    int64_t local;  /* local_bytes_per_thread */
    int64_t config; /* 0: null */
    int64_t launch; /* 0: null */
} krow_t;

/* A kernel batch on device 0; old: without the optional columns. */
static void put_kernels_as(sess_t *s, const krow_t *r, size_t n, int old) {
    put(s, "{\"type\":\"kernel\",\"v\":1");
    COL(s, "start_ns", n, r[i_].start);
    COL(s, "end_ns", n, r[i_].end);
    COL(s, "device", n, 0);
    COL(s, "context", n, 1);
    COL(s, "stream", n, 7);
    COL(s, "correlation", n, i_ + 1);
    COL(s, "name", n, r[i_].name ? r[i_].name : 3);
    COL(s, "grid_x", n, r[i_].grid ? r[i_].grid : 1024);
    COL(s, "grid_y", n, 1);
    COL(s, "grid_z", n, 1);
    COL(s, "block_x", n, 256);
    COL(s, "block_y", n, 1);
    COL(s, "block_z", n, 1);
    COL(s, "registers", n, r[i_].regs ? r[i_].regs : 32);
    COL(s, "static_smem_bytes", n, 0);
    COL(s, "dynamic_smem_bytes", n, 0);
    if (!old) {
        COL(s, "local_bytes_per_thread", n, r[i_].local);
        COL(s, "graph_id", n, 0);
        COL(s, "graph_node", n, 0);
        COL(s, "demangled", n, r[i_].name == 1 ? 2 : r[i_].name ? r[i_].name : 3);
        COL(s, "scope", n, NUL);
        COL(s, "config", n, r[i_].config ? r[i_].config : NUL);
        COL(s, "external_kind", n, NUL);
        COL(s, "external_id", n, NUL);
        COL(s, "launch_ns", n, r[i_].launch ? r[i_].launch : NUL);
        COL(s, "tid", n, r[i_].launch ? 42 : NUL);
    }
    put(s, "}\n");
}

static void put_kernels(sess_t *s, const krow_t *r, size_t n) { put_kernels_as(s, r, n, 0); }

typedef struct crow {
    int64_t start, end, bytes;
    int kind, src, dst;
} crow_t;

static void put_copies(sess_t *s, const crow_t *r, size_t n) {
    put(s, "{\"type\":\"copy\",\"v\":1");
    COL(s, "start_ns", n, r[i_].start);
    COL(s, "end_ns", n, r[i_].end);
    COL(s, "device", n, 0);
    COL(s, "stream", n, 7);
    COL(s, "correlation", n, 1000 + i_);
    COL(s, "bytes", n, r[i_].bytes);
    COL(s, "copy_kind", n, r[i_].kind);
    COL(s, "src_kind", n, r[i_].src);
    COL(s, "dst_kind", n, r[i_].dst);
    COL(s, "async", n, 1);
    put(s, "}\n");
}

static void put_memset(sess_t *s, int64_t start, int64_t end) {
    put(s,
        "{\"type\":\"memset\",\"v\":1,\"start_ns\":[%lld],\"end_ns\":[%lld],\"device\":[0],"
        "\"stream\":[7],\"correlation\":[2000],\"bytes\":[4096],\"memory_kind\":[3]}\n",
        (long long)start, (long long)end);
}

typedef struct srow {
    int64_t util;     /* gpu_util_pct */
    int64_t throttle; /* NUL: null */
    int64_t clock;    /* 0: 1980 */
    double sm_active; /* < 0: null */
} srow_t;

/* gpu_sample rows of device `device`, 100 ms apart. */
static void put_samples(sess_t *s, int device, const srow_t *r, size_t n) {
    put(s, "{\"type\":\"gpu_sample\",\"v\":1");
    COL(s, "ts_ns", n, (int64_t)(i_ + 1) * 100 * MS);
    COL(s, "device", n, device);
    COL(s, "gpu_util_pct", n, r[i_].util);
    COL(s, "temp_gpu_c", n, 60 + (int64_t)i_);
    COL(s, "power_mw", n, 650000);
    COL(s, "power_limit_mw", n, 700000);
    COL(s, "clock_sm_mhz", n, r[i_].clock ? r[i_].clock : 1980);
    COL(s, "throttle_reasons", n, r[i_].throttle);
    put(s, ",\"sm_active_pct\":[");
    for (size_t i = 0; i < n; i++) {
        if (i) put(s, ",");
        if (r[i].sm_active < 0)
            put(s, "null");
        else
            put(s, "%.3f", r[i].sm_active);
    }
    put(s, "],\"sm_occupancy_pct\":[");
    for (size_t i = 0; i < n; i++)
        put(s, "%s%s", i ? "," : "", r[i].sm_active < 0 ? "null" : "12.5");
    put(s, "]}\n");
}

typedef struct cfg {
    int64_t block_threads, regs, smem;
    int64_t blocks, warps, max_warps; /* blocks_per_sm, active_warps, max_warps */
    int64_t lw, lr, ls, lb;           /* limit_warps, _registers, _smem, _blocks */
    const char *limiter;
    const char *why; /* non-NULL: no driver figures, occupancy_unknown */
} cfg_t;

static void put_config(sess_t *s, int64_t id, const cfg_t *c) {
    put(s,
        "{\"type\":\"kernel_config\",\"v\":1,\"ts_ns\":1000,\"id\":%lld,\"name\":\"_Z6targetPf\","
        "\"block_threads\":%lld,\"dynamic_smem_bytes\":%lld",
        (long long)id, (long long)c->block_threads, (long long)c->smem);
    if (c->why) {
        put(s, ",\"occupancy_unknown\":\"%s\"}\n", c->why);
        return;
    }
    put(s,
        ",\"device\":0,\"registers\":%lld,\"static_smem_bytes\":0,\"local_bytes_per_thread\":0,"
        "\"max_threads_per_block\":1024,\"blocks_per_sm\":%lld,\"active_warps\":%lld,"
        "\"max_warps\":%lld,\"occupancy\":%.17g",
        (long long)c->regs, (long long)c->blocks, (long long)c->warps, (long long)c->max_warps,
        (double)c->warps / (double)c->max_warps);
    if (c->limiter)
        put(s,
            ",\"limit_warps\":%lld,\"limit_registers\":%lld,\"limit_smem\":%lld,"
            "\"limit_blocks\":%lld,\"limiter\":\"%s\",\"breakdown_agrees\":true",
            (long long)c->lw, (long long)c->lr, (long long)c->ls, (long long)c->lb, c->limiter);
    put(s, "}\n");
}

/* ---------------------------------------------------------------------- */
/* Computing and looking at insights                                        */
/* ---------------------------------------------------------------------- */

typedef struct run {
    sess_t *s;
    gpufl__model_t *m;
    gpufl__insights_t in;
} run_t;

static run_t compute(sess_t *s) {
    run_t r = {s, NULL, {0}};
    assert_int_equal(fclose(s->f), 0);
    s->f = NULL;
    int rc = gpufl__model_load(&r.m, s->dir);
    if (rc) fail_msg("load %s: %d %s", s->dir, rc, gpufl_last_error());
    if (r.m->n_warnings) fail_msg("warning: %s", r.m->warnings[0].message);
    assert_int_equal(gpufl__insights_compute(&r.in, r.m), 0);
    return r;
}

static void done(run_t *r) {
    char cmd[128];
    gpufl__insights_free(&r->in);
    gpufl__model_destroy(r->m);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->s->dir);
    assert_int_equal(system(cmd), 0);
    free(r->s);
}

static size_t count(const run_t *r, const char *rule) {
    size_t n = 0;
    for (size_t i = 0; i < r->in.n; i++) n += strcmp(r->in.items[i].rule, rule) == 0;
    return n;
}

/* The only insight of `rule`; fails unless there is exactly one. */
static const gpufl__insight_t *one(const run_t *r, const char *rule) {
    const gpufl__insight_t *found = NULL;
    for (size_t i = 0; i < r->in.n; i++)
        if (strcmp(r->in.items[i].rule, rule) == 0) {
            if (found) fail_msg("more than one %s insight", rule);
            found = &r->in.items[i];
        }
    if (!found) fail_msg("no %s insight", rule);
    return found;
}

/* The insight of `rule` in `category`, or NULL. */
static const gpufl__insight_t *in_category(const run_t *r, const char *rule, const char *cat) {
    for (size_t i = 0; i < r->in.n; i++)
        if (strcmp(r->in.items[i].rule, rule) == 0 && strcmp(r->in.items[i].category, cat) == 0)
            return &r->in.items[i];
    return NULL;
}

static int has_ev(const gpufl__insight_t *x, const char *name) {
    for (size_t i = 0; i < x->n_evidence; i++)
        if (strcmp(x->evidence[i].name, name) == 0) return 1;
    return 0;
}

static double ev(const gpufl__insight_t *x, const char *name) {
    for (size_t i = 0; i < x->n_evidence; i++)
        if (strcmp(x->evidence[i].name, name) == 0) return x->evidence[i].value;
    fail_msg("%s: no evidence %s", x->rule, name);
    return 0;
}

static const char *skip_why(const run_t *r, const char *rule) {
    for (size_t i = 0; i < r->in.n_skipped; i++)
        if (strcmp(r->in.skipped[i].rule, rule) == 0) return r->in.skipped[i].why;
    return NULL;
}

static void expect_text(const char *text, const char *part) {
    if (!text || !strstr(text, part)) fail_msg("\"%s\" not in \"%s\"", part, text ? text : "");
}

static const char *const my_rules[] = {"low_occupancy", "register_limited", "register_spill",
                                       "launch_bound",  "memcpy_bound",     "pageable_memcpy",
                                       "gpu_idle",      "throttling",       "low_sm_activity"};
#define N_MY_RULES (sizeof my_rules / sizeof my_rules[0])

/* ---------------------------------------------------------------------- */
/* low_occupancy                                                            */
/* ---------------------------------------------------------------------- */

/* One launch configuration whose kernel takes share_ppm parts per million
 * of device 0's kernel time (the rest: a kernel without a config). */
static run_t occ_case(const cfg_t *c, int64_t share_ppm) {
    sess_t *s = sess_new(0);
    put_config(s, 1, c);
    krow_t k[2] = {{.start = 1 * MS, .end = 1 * MS + share_ppm, .name = 1, .config = 1},
                   {.start = 3 * MS, .end = 3 * MS + 1000000 - share_ppm}};
    put_kernels(s, k, 2);
    return compute(s);
}

/* warps of 64 active, blocks of 256 threads (8 warps), limited by shared
 * memory unless said otherwise. */
static cfg_t occ_cfg(int64_t warps) {
    return (cfg_t){256, 32, 98304,     warps / 8, warps,           64,
                   8,   8,  warps / 8, 32,        "shared_memory", NULL};
}

static void test_insights_low_occupancy(void **state) {
    (void)state;
    /* 15 of 64 warps (23.4%): fires; 16 of 64 (25%): does not. Blocks of
     * 160 threads (5 warps), 3 per SM. */
    cfg_t c = {160, 32, 65536, 3, 15, 64, 12, 12, 3, 32, "shared_memory", NULL};
    run_t r = occ_case(&c, 100000);
    const gpufl__insight_t *x = one(&r, "low_occupancy");
    assert_string_equal(x->category, "OCCUPANCY");
    assert_int_equal(x->severity, GPUFL_SEVERITY_LOW);
    assert_string_equal(x->kernel, "target(float*)");
    expect_text(x->title, "target(float*)");
    expect_text(x->title, "23.4%");
    ASSERT_NEAR(ev(x, "occupancy_pct"), 100.0 * 15 / 64);
    ASSERT_NEAR(ev(x, "active_warps"), 15);
    ASSERT_NEAR(ev(x, "max_warps"), 64);
    ASSERT_NEAR(ev(x, "blocks_per_sm"), 3);
    ASSERT_NEAR(ev(x, "smem_per_block_bytes"), 65536);
    ASSERT_NEAR(ev(x, "kernel_ns"), 100000);
    ASSERT_NEAR(ev(x, "kernel_share_pct"), 10);
    ASSERT_NEAR(ev(x, "launches"), 1);
    ASSERT_NEAR(x->weight, 100000);
    done(&r);
    c = occ_cfg(16);
    r = occ_case(&c, 100000);
    assert_int_equal(count(&r, "low_occupancy"), 0);
    assert_null(skip_why(&r, "low_occupancy"));
    done(&r);

    /* negligible share: 5.1% fires, 4.9% does not */
    c = occ_cfg(8);
    r = occ_case(&c, 51000);
    assert_int_equal(count(&r, "low_occupancy"), 1);
    done(&r);
    r = occ_case(&c, 49000);
    assert_int_equal(count(&r, "low_occupancy"), 0);
    done(&r);

    /* MEDIUM: at most 12.5% on a kernel of at least 25% of the time */
    r = occ_case(&c, 250000);
    assert_int_equal(one(&r, "low_occupancy")->severity, GPUFL_SEVERITY_MEDIUM);
    done(&r);
    r = occ_case(&c, 249000);
    assert_int_equal(one(&r, "low_occupancy")->severity, GPUFL_SEVERITY_LOW);
    done(&r);
    c = (cfg_t){288, 32, 65536, 1, 9, 64, 7, 7, 1, 32, "shared_memory", NULL}; /* 14.1% */
    r = occ_case(&c, 500000);
    assert_int_equal(one(&r, "low_occupancy")->severity, GPUFL_SEVERITY_LOW);
    done(&r);
}

static void test_insights_occupancy_advice(void **state) {
    (void)state;
    static const struct {
        cfg_t c;
        const char *advice, *title;
    } cases[] = {
        {{256, 168, 0, 1, 8, 64, 8, 1, 32, 32, "registers", NULL},
         "__launch_bounds__(256",
         "limited by registers"},
        {{256, 32, 98304, 1, 8, 64, 8, 8, 1, 32, "shared_memory", NULL},
         "carveout",
         "limited by shared_memory"},
        {{256, 32, 0, 1, 8, 64, 1, 2, 32, 32, "warps", NULL},
         "fit 1 times in the SM's 64 warp",
         "limited by warps"},
        {{32, 32, 0, 8, 8, 64, 64, 64, 64, 8, "blocks", NULL},
         "at least 256 threads, so that 8 blocks fill the 64 warp slots",
         "limited by blocks"},
        {{256, 32, 0, 1, 8, 64, 0, 0, 0, 0, NULL, NULL},
         "does not say",
         "limited by an unknown resource"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_t r = occ_case(&cases[i].c, 300000);
        const gpufl__insight_t *x = one(&r, "low_occupancy");
        expect_text(x->advice, cases[i].advice);
        expect_text(x->title, cases[i].title);
        done(&r);
    }
    /* the register advice carries the figures */
    run_t r = occ_case(&cases[0].c, 300000);
    expect_text(one(&r, "low_occupancy")->advice,
                "168 registers per thread leave room for 1 blocks of 256");
    done(&r);
}

/* ---------------------------------------------------------------------- */
/* register_limited                                                         */
/* ---------------------------------------------------------------------- */

/* Blocks of 256 threads limited by `regs` registers per thread to `blocks`
 * per SM (as the 7.0+ rules give). */
static cfg_t reg_cfg(int64_t regs, int64_t blocks) {
    return (cfg_t){256, regs, 0, blocks, blocks * 8, 64, 8, blocks, 10, 32, "registers", NULL};
}

static void test_insights_register_limited(void **state) {
    (void)state;
    /* 72 registers: 2304 per warp, 7 warps per quarter, 3 blocks (37.5%);
     * 64 registers give 4 blocks (50%). A cut of 8 on a 25% kernel: MEDIUM. */
    cfg_t c = reg_cfg(72, 3);
    run_t r = occ_case(&c, 250000);
    const gpufl__insight_t *x = one(&r, "register_limited");
    assert_string_equal(x->category, "OCCUPANCY");
    assert_int_equal(x->severity, GPUFL_SEVERITY_MEDIUM);
    assert_string_equal(x->kernel, "target(float*)");
    expect_text(x->title, "72 registers per thread hold it to 37.5% occupancy; 64 would give "
                          "50.0%");
    expect_text(x->advice, "__launch_bounds__(256, 4)");
    ASSERT_NEAR(ev(x, "registers_per_thread"), 72);
    ASSERT_NEAR(ev(x, "registers_for_next_level"), 64);
    ASSERT_NEAR(ev(x, "register_cut"), 8);
    ASSERT_NEAR(ev(x, "occupancy_pct"), 37.5);
    ASSERT_NEAR(ev(x, "next_occupancy_pct"), 50);
    ASSERT_NEAR(ev(x, "next_blocks_per_sm"), 4);
    assert_int_equal(count(&r, "low_occupancy"), 0); /* 37.5% is not low */
    done(&r);
    /* below SHARE_MAJOR: LOW; below SHARE_MIN: nothing */
    r = occ_case(&c, 249000);
    assert_int_equal(one(&r, "register_limited")->severity, GPUFL_SEVERITY_LOW);
    done(&r);
    r = occ_case(&c, 49000);
    assert_int_equal(count(&r, "register_limited"), 0);
    done(&r);

    /* the cut: 96 -> 80 (16) is MEDIUM, 104 -> 80 (24) is LOW */
    c = reg_cfg(96, 2);
    r = occ_case(&c, 300000);
    x = one(&r, "register_limited");
    assert_int_equal(x->severity, GPUFL_SEVERITY_MEDIUM);
    ASSERT_NEAR(ev(x, "registers_for_next_level"), 80);
    ASSERT_NEAR(ev(x, "next_occupancy_pct"), 37.5);
    done(&r);
    c = reg_cfg(104, 2);
    r = occ_case(&c, 300000);
    x = one(&r, "register_limited");
    assert_int_equal(x->severity, GPUFL_SEVERITY_LOW);
    ASSERT_NEAR(ev(x, "register_cut"), 24);
    done(&r);

    /* the occupancy target: 64 registers give 50%, not below it */
    c = reg_cfg(64, 4);
    r = occ_case(&c, 300000);
    assert_int_equal(count(&r, "register_limited"), 0);
    done(&r);

    /* shared memory binds at the next level: cutting registers gains nothing */
    c = reg_cfg(72, 3);
    c.ls = 3;
    r = occ_case(&c, 300000);
    assert_int_equal(count(&r, "register_limited"), 0);
    done(&r);
    /* limits that do not follow the 7.0+ register rules: no figure, no insight */
    c = reg_cfg(72, 3);
    c.lr = 5;
    r = occ_case(&c, 300000);
    assert_int_equal(count(&r, "register_limited"), 0);
    done(&r);
    /* another limiter */
    c = occ_cfg(8);
    r = occ_case(&c, 300000);
    assert_int_equal(count(&r, "register_limited"), 0);
    done(&r);
}

static void test_insights_occupancy_skips(void **state) {
    (void)state;
    /* kernels but no kernel_config records */
    sess_t *s = sess_new(0);
    krow_t k = {.start = MS, .end = 2 * MS};
    put_kernels(s, &k, 1);
    run_t r = compute(s);
    expect_text(skip_why(&r, "low_occupancy"), "no kernel_config records");
    expect_text(skip_why(&r, "register_limited"), "no kernel_config records");
    done(&r);
    /* configs without the driver's figures */
    cfg_t c = {.block_threads = 256, .why = "libcuda not loaded"};
    r = occ_case(&c, 500000);
    expect_text(skip_why(&r, "low_occupancy"),
                "no launch configuration has a theoretical occupancy: libcuda not loaded");
    expect_text(skip_why(&r, "register_limited"), "libcuda not loaded");
    assert_int_equal(count(&r, "low_occupancy"), 0);
    done(&r);
}

/* ---------------------------------------------------------------------- */
/* register_spill                                                           */
/* ---------------------------------------------------------------------- */

static run_t spill_case(int64_t local, int64_t regs, int64_t share_ppm, int old) {
    sess_t *s = sess_new(0);
    krow_t k[3] = {
        {.start = 1 * MS, .end = 1 * MS + share_ppm / 2, .name = 1, .regs = regs, .local = local},
        {.start = 2 * MS, .end = 2 * MS + share_ppm / 2, .name = 1, .regs = regs, .local = local},
        {.start = 3 * MS, .end = 3 * MS + 1000000 - share_ppm}};
    put_kernels_as(s, k, 3, old);
    return compute(s);
}

static void test_insights_register_spill(void **state) {
    (void)state;
    run_t r = spill_case(16, 40, 100000, 0);
    const gpufl__insight_t *x = one(&r, "register_spill");
    assert_string_equal(x->category, "MEMORY");
    assert_int_equal(x->severity, GPUFL_SEVERITY_LOW);
    assert_string_equal(x->kernel, "target(float*)");
    expect_text(x->title, "16 B of local memory per thread");
    expect_text(x->message, "spills and per-thread arrays or stack frames alike");
    expect_text(x->message, "SASS metrics engine");
    assert_null(strstr(x->message, "spills are likely"));
    ASSERT_NEAR(ev(x, "local_bytes_per_thread"), 16);
    ASSERT_NEAR(ev(x, "registers_per_thread"), 40);
    ASSERT_NEAR(ev(x, "kernel_ns"), 100000);
    ASSERT_NEAR(ev(x, "kernel_share_pct"), 10);
    ASSERT_NEAR(ev(x, "launches"), 2);
    done(&r);
    /* at the register ceiling */
    r = spill_case(512, 255, 100000, 0);
    expect_text(one(&r, "register_spill")->message, "spills are likely");
    done(&r);
    /* severity at the major share, negligible share, no local memory */
    r = spill_case(16, 40, 250000, 0);
    assert_int_equal(one(&r, "register_spill")->severity, GPUFL_SEVERITY_MEDIUM);
    done(&r);
    r = spill_case(16, 40, 248000, 0);
    assert_int_equal(one(&r, "register_spill")->severity, GPUFL_SEVERITY_LOW);
    done(&r);
    r = spill_case(16, 40, 50000, 0);
    assert_int_equal(count(&r, "register_spill"), 1);
    done(&r);
    r = spill_case(16, 40, 48000, 0);
    assert_int_equal(count(&r, "register_spill"), 0);
    done(&r);
    r = spill_case(0, 40, 500000, 0);
    assert_int_equal(count(&r, "register_spill"), 0);
    assert_null(skip_why(&r, "register_spill"));
    done(&r);
    /* a log without the column */
    r = spill_case(16, 40, 500000, 1);
    assert_int_equal(count(&r, "register_spill"), 0);
    expect_text(skip_why(&r, "register_spill"), "no local_bytes_per_thread");
    done(&r);
}

/* ---------------------------------------------------------------------- */
/* launch_bound                                                             */
/* ---------------------------------------------------------------------- */

typedef struct launch_case {
    size_t n;          /* kernels */
    size_t n_short;    /* of them 2 us long; the rest 5 us */
    int64_t period_ns; /* start to start */
    int64_t session_ns;
    int with_launch; /* launch_ns = start - 1 us */
} launch_case_t;

static run_t launch_run(const launch_case_t *c) {
    sess_t *s = sess_new(0);
    krow_t *k = calloc(c->n, sizeof *k);
    assert_non_null(k);
    for (size_t i = 0; i < c->n; i++) {
        k[i].start = MS + (int64_t)i * c->period_ns;
        k[i].end = k[i].start + (i < c->n_short ? 2 * US : 5 * US);
        k[i].name = 4;
        if (c->with_launch) k[i].launch = k[i].start - US;
    }
    put_kernels(s, k, c->n);
    free(k);
    sess_end(s, c->session_ns);
    return compute(s);
}

static void test_insights_launch_bound(void **state) {
    (void)state;
    /* 100 kernels of 2 us every 6 us: 33.6% busy, gaps of 4 us */
    launch_case_t c = {100, 100, 6 * US, 10000 * MS, 1};
    run_t r = launch_run(&c);
    const gpufl__insight_t *x = one(&r, "launch_bound");
    assert_string_equal(x->category, "LAUNCH");
    assert_int_equal(x->severity, GPUFL_SEVERITY_MEDIUM);
    expect_text(x->title, "100 short kernels keep device 0 busy only 33.6%");
    expect_text(x->advice, "CUDA graph");
    expect_text(x->message, "the GPU was waiting for the CPU");
    ASSERT_NEAR(ev(x, "kernels"), 100);
    ASSERT_NEAR(ev(x, "short_kernels_pct"), 100);
    ASSERT_NEAR(ev(x, "median_kernel_ns"), 2000);
    ASSERT_NEAR(ev(x, "span_ns"), 99 * 6000 + 2000);
    ASSERT_NEAR(ev(x, "busy_pct"), 100.0 * 200000 / 596000);
    ASSERT_NEAR(ev(x, "idle_ns"), 396000);
    ASSERT_NEAR(ev(x, "median_gap_ns"), 4000);
    ASSERT_NEAR(ev(x, "launch_rate_per_s"), 1e9 / 6000);
    ASSERT_NEAR(ev(x, "median_launch_interval_ns"), 6000);
    ASSERT_NEAR(ev(x, "median_launch_to_start_ns"), 1000);
    done(&r);
    /* without launch times: GPU-side figures only */
    c.with_launch = 0;
    r = launch_run(&c);
    x = one(&r, "launch_bound");
    assert_false(has_ev(x, "launch_rate_per_s"));
    ASSERT_NEAR(ev(x, "median_gap_ns"), 4000);
    done(&r);
    /* 99 kernels are not a stream */
    c.n = 99;
    c.n_short = 99;
    r = launch_run(&c);
    assert_int_equal(count(&r, "launch_bound"), 0);
    done(&r);
    /* more than half short: 51 fires, 50 does not (the rest are 5 us, not short) */
    c = (launch_case_t){100, 51, 20 * US, 10000 * MS, 0};
    r = launch_run(&c);
    x = one(&r, "launch_bound");
    ASSERT_NEAR(ev(x, "short_kernels_pct"), 51);
    done(&r);
    c.n_short = 50;
    r = launch_run(&c);
    assert_int_equal(count(&r, "launch_bound"), 0);
    done(&r);
    /* busy below half the span: every 4.1 us (49.0%) fires, every 4 us (50.3%) does not */
    c = (launch_case_t){100, 100, 4100, 10000 * MS, 0};
    r = launch_run(&c);
    assert_int_equal(count(&r, "launch_bound"), 1);
    done(&r);
    c.period_ns = 4000;
    r = launch_run(&c);
    assert_int_equal(count(&r, "launch_bound"), 0);
    done(&r);
    /* median gap below 100 us: 99 us fires, 100 us is host work (gpu_idle's) */
    c = (launch_case_t){100, 100, 101 * US, 10000 * MS, 0};
    r = launch_run(&c);
    ASSERT_NEAR(ev(one(&r, "launch_bound"), "median_gap_ns"), 99000);
    done(&r);
    c.period_ns = 102 * US;
    r = launch_run(&c);
    assert_int_equal(count(&r, "launch_bound"), 0);
    assert_int_equal(count(&r, "gpu_idle"), 1);
    done(&r);
    /* HIGH: busy below 20% and idle at least 10% of the session */
    c = (launch_case_t){100, 100, 11 * US, 5 * MS, 0}; /* 18.3% busy, 891 us idle */
    r = launch_run(&c);
    assert_int_equal(one(&r, "launch_bound")->severity, GPUFL_SEVERITY_HIGH);
    done(&r);
    c.session_ns = 10 * MS; /* idle 8.9% of the session */
    r = launch_run(&c);
    assert_int_equal(one(&r, "launch_bound")->severity, GPUFL_SEVERITY_MEDIUM);
    done(&r);
    c = (launch_case_t){100, 100, 10 * US, 5 * MS, 0}; /* 20.2% busy */
    r = launch_run(&c);
    assert_int_equal(one(&r, "launch_bound")->severity, GPUFL_SEVERITY_MEDIUM);
    done(&r);
}

/* ---------------------------------------------------------------------- */
/* memcpy_bound, pageable_memcpy                                            */
/* ---------------------------------------------------------------------- */

/* A pinned host-to-device copy of copy_ns, then kernels of kernel_ns; with
 * overlap_ns of the copy under a kernel. */
static run_t copy_run(int64_t copy_ns, int64_t kernel_ns, int64_t overlap_ns) {
    sess_t *s = sess_new(0);
    crow_t cp = {10 * MS, 10 * MS + copy_ns, 64 << 20, 1, 2, 3};
    put_copies(s, &cp, 1);
    int64_t k0 = 10 * MS + copy_ns - overlap_ns;
    krow_t k = {.start = k0, .end = k0 + kernel_ns};
    put_kernels(s, &k, 1);
    return compute(s);
}

static void test_insights_memcpy_bound(void **state) {
    (void)state;
    /* 1 ms of copies, 2.9 ms of kernels: 25.6% -> MEDIUM; 3.1 ms: 24.4% -> none */
    run_t r = copy_run(MS, 2900 * US, 0);
    const gpufl__insight_t *x = one(&r, "memcpy_bound");
    assert_string_equal(x->category, "MEMORY");
    assert_int_equal(x->severity, GPUFL_SEVERITY_MEDIUM);
    expect_text(x->title, "device 0 spent 25.6% of its busy time only copying");
    expect_text(x->advice, "cudaMemcpyAsync");
    ASSERT_NEAR(ev(x, "copy_ns"), 1e6);
    ASSERT_NEAR(ev(x, "exposed_copy_ns"), 1e6);
    ASSERT_NEAR(ev(x, "kernel_ns"), 2.9e6);
    ASSERT_NEAR(ev(x, "exposed_copy_pct"), 100 / 3.9);
    ASSERT_NEAR(ev(x, "htod_bytes"), 64 << 20);
    ASSERT_NEAR(ev(x, "copies"), 1);
    assert_int_equal(count(&r, "pageable_memcpy"), 0); /* pinned */
    done(&r);
    r = copy_run(MS, 3100 * US, 0);
    assert_int_equal(count(&r, "memcpy_bound"), 0);
    done(&r);
    /* HIGH at half the busy time */
    r = copy_run(MS, MS, 0);
    assert_int_equal(one(&r, "memcpy_bound")->severity, GPUFL_SEVERITY_HIGH);
    done(&r);
    r = copy_run(MS, 1020 * US, 0);
    assert_int_equal(one(&r, "memcpy_bound")->severity, GPUFL_SEVERITY_MEDIUM);
    done(&r);
    /* at least 1 ms exposed */
    r = copy_run(990 * US, 100 * US, 0);
    assert_int_equal(count(&r, "memcpy_bound"), 0);
    done(&r);
    /* copies under kernels do not count: 2 ms copy, 1.5 ms of it overlapped */
    r = copy_run(2 * MS, 10 * MS, 1500 * US);
    assert_int_equal(count(&r, "memcpy_bound"), 0);
    done(&r);
    r = copy_run(3 * MS, 2 * MS, 1 * MS); /* 2 ms exposed of 4 ms busy */
    x = one(&r, "memcpy_bound");
    ASSERT_NEAR(ev(x, "exposed_copy_ns"), 2e6);
    ASSERT_NEAR(ev(x, "exposed_copy_pct"), 50);
    assert_int_equal(x->severity, GPUFL_SEVERITY_HIGH);
    done(&r);
}

/* Pageable copies (host to device and back) of pageable_ns in all, pinned
 * copies of pinned_ns (16 MiB each ms), and kernels of kernel_ns. */
static run_t pageable_run(int64_t pageable_ns, int64_t pinned_ns, int64_t kernel_ns) {
    sess_t *s = sess_new(0);
    crow_t cp[3] = {{10 * MS, 10 * MS + pageable_ns / 2, 2 << 20, 1, 1, 3},
                    {20 * MS, 20 * MS + pageable_ns / 2, 2 << 20, 2, 3, 1},
                    {30 * MS, 30 * MS + pinned_ns, (16 << 20) * pinned_ns / MS, 1, 2, 3}};
    put_copies(s, cp, pinned_ns ? 3 : 2);
    krow_t k = {.start = 40 * MS, .end = 40 * MS + kernel_ns};
    put_kernels(s, &k, 1);
    return compute(s);
}

static void test_insights_pageable_memcpy(void **state) {
    (void)state;
    /* 1 ms pageable (4 MiB) in 1 + 1 + 20 ms busy: LOW */
    run_t r = pageable_run(MS, MS, 20 * MS);
    const gpufl__insight_t *x = one(&r, "pageable_memcpy");
    assert_string_equal(x->category, "MEMORY");
    assert_int_equal(x->severity, GPUFL_SEVERITY_LOW);
    expect_text(x->title, "2 host-device copies on device 0");
    expect_text(x->message, "pinned memory in this session reached 16.8 GB/s");
    expect_text(x->advice, "cudaMallocHost");
    ASSERT_NEAR(ev(x, "pageable_copies"), 2);
    ASSERT_NEAR(ev(x, "pageable_bytes"), 4 << 20);
    ASSERT_NEAR(ev(x, "pageable_ns"), 1e6);
    ASSERT_NEAR(ev(x, "pageable_bytes_per_s"), (4 << 20) * 1e3);
    ASSERT_NEAR(ev(x, "pinned_bytes_per_s"), (16 << 20) * 1e3);
    ASSERT_NEAR(ev(x, "busy_share_pct"), 100.0 / 22);
    done(&r);
    /* below 1 ms: nothing */
    r = pageable_run(990 * US, MS, 20 * MS);
    assert_int_equal(count(&r, "pageable_memcpy"), 0);
    done(&r);
    /* MEDIUM at 10% of the busy time: 1 ms of 10 ms, not of 10.1 ms */
    r = pageable_run(MS, 0, 9 * MS);
    x = one(&r, "pageable_memcpy");
    assert_int_equal(x->severity, GPUFL_SEVERITY_MEDIUM);
    assert_false(has_ev(x, "pinned_bytes_per_s"));
    assert_null(strstr(x->message, "pinned memory in this session"));
    done(&r);
    r = pageable_run(MS, 0, 9100 * US);
    assert_int_equal(one(&r, "pageable_memcpy")->severity, GPUFL_SEVERITY_LOW);
    done(&r);
}

/* Kernels as launch rows (PcSampling, Deep): memcpy_bound needs their GPU
 * time and is skipped, pageable copies are still found, their share taken
 * of the session (100 ms). */
static void put_launch_rows(sess_t *s, const int64_t *corr, const int64_t *tid, size_t n,
                            int64_t config);

static void test_insights_pageable_memcpy_untimed(void **state) {
    (void)state;
    sess_t *s = sess_new(0);
    crow_t cp[2] = {{10 * MS, 10 * MS + 5 * MS, 2 << 20, 1, 1, 3},
                    {20 * MS, 20 * MS + 6 * MS, 2 << 20, 2, 3, 1}};
    put_copies(s, cp, 2);
    int64_t corr[3] = {40000, 41000, 42000};
    put_launch_rows(s, corr, NULL, 3, 0);
    sess_end(s, 100 * MS);
    run_t r = compute(s);
    const gpufl__insight_t *x = one(&r, "pageable_memcpy");
    assert_int_equal(x->severity, GPUFL_SEVERITY_MEDIUM); /* 11 % of the session */
    ASSERT_NEAR(ev(x, "session_share_pct"), 11);
    assert_false(has_ev(x, "busy_share_pct"));
    expect_text(x->message, "11.0% of the session: its kernels were not timed");
    assert_int_equal(count(&r, "memcpy_bound"), 0);
    assert_non_null(skip_why(&r, "memcpy_bound"));
    assert_null(skip_why(&r, "pageable_memcpy"));
    done(&r);
}

/* ---------------------------------------------------------------------- */
/* gpu_idle                                                                 */
/* ---------------------------------------------------------------------- */

/* Two kernels 100 ms apart in all, with idle_ns between them: [0, a), [b, 100 ms). */
static run_t idle_run(int64_t span_ns, int64_t idle_ns) {
    sess_t *s = sess_new(0);
    int64_t a = 10 * MS + (span_ns - idle_ns) / 2;
    krow_t k[2] = {{.start = 10 * MS, .end = a}, {.start = a + idle_ns, .end = 10 * MS + span_ns}};
    put_kernels(s, k, 2);
    return compute(s);
}

static void test_insights_gpu_idle(void **state) {
    (void)state;
    /* 20% of 100 ms fires MEDIUM; 19.9% does not */
    run_t r = idle_run(100 * MS, 20 * MS);
    const gpufl__insight_t *x = one(&r, "gpu_idle");
    assert_string_equal(x->category, "UTILIZATION");
    assert_int_equal(x->severity, GPUFL_SEVERITY_MEDIUM);
    expect_text(x->title, "Device 0 idle 20.0%");
    ASSERT_NEAR(ev(x, "idle_pct"), 20);
    ASSERT_NEAR(ev(x, "idle_ns"), 20e6);
    ASSERT_NEAR(ev(x, "span_ns"), 100e6);
    ASSERT_NEAR(ev(x, "gaps"), 1);
    ASSERT_NEAR(ev(x, "gap1_ns"), 20e6);
    ASSERT_NEAR(ev(x, "gap1_start_ns"), 50e6);
    assert_false(has_ev(x, "gap2_ns"));
    done(&r);
    r = idle_run(100 * MS, 19900 * US);
    assert_int_equal(count(&r, "gpu_idle"), 0);
    done(&r);
    /* HIGH at half the span */
    r = idle_run(100 * MS, 50 * MS);
    assert_int_equal(one(&r, "gpu_idle")->severity, GPUFL_SEVERITY_HIGH);
    done(&r);
    r = idle_run(100 * MS, 49900 * US);
    assert_int_equal(one(&r, "gpu_idle")->severity, GPUFL_SEVERITY_MEDIUM);
    done(&r);
    /* at least 1 ms idle: 1 ms of 2 ms fires, 0.99 ms does not */
    r = idle_run(2 * MS, MS);
    assert_int_equal(one(&r, "gpu_idle")->severity, GPUFL_SEVERITY_HIGH);
    done(&r);
    r = idle_run(2 * MS, 990 * US);
    assert_int_equal(count(&r, "gpu_idle"), 0);
    done(&r);
}

static void test_insights_gpu_idle_gaps(void **state) {
    (void)state;
    /* Work: kernels [0,10) [30,40) [45,50) [90,100) ms, a copy [60,70) and
     * a memset [75,80): gaps 20 (10..30), 5 (40..45), 10 (50..60), 5
     * (70..75), 10 (80..90). A scope "train/load" covers 10..30 ms. */
    sess_t *s = sess_new(0);
    krow_t k[4] = {{.start = 0, .end = 10 * MS},
                   {.start = 30 * MS, .end = 40 * MS},
                   {.start = 45 * MS, .end = 50 * MS},
                   {.start = 90 * MS, .end = 100 * MS}};
    put_kernels(s, k, 4);
    crow_t cp = {60 * MS, 70 * MS, 1 << 20, 8, 3, 3};
    put_copies(s, &cp, 1);
    put_memset(s, 75 * MS, 80 * MS);
    FILE *f;
    char path[128];
    snprintf(path, sizeof path, "%s/scope.log", s->dir);
    assert_non_null(f = fopen(path, "w"));
    fprintf(f, "{\"type\":\"header\",\"v\":1,\"file\":\"scope\",\"segment\":0}\n"
               "{\"type\":\"dict\",\"v\":1,\"id\":[101,102,103],\"str\":[\"train\",\"load\","
               "\"train/load\"]}\n"
               "{\"type\":\"scope_begin\",\"v\":1,\"ts_ns\":[0,9000000],\"tid\":[1,1],"
               "\"id\":[1,2],\"parent\":[0,1],\"depth\":[1,2],\"name\":[101,102],\"tag\":[0,0],"
               "\"path\":[101,103],\"repeat\":[0,0],\"warmup\":[0,0]}\n"
               "{\"type\":\"scope_end\",\"v\":1,\"ts_ns\":[31000000,100000000],\"tid\":[1,1],"
               "\"id\":[2,1],\"implicit\":[0,0]}\n");
    assert_int_equal(fclose(f), 0);
    run_t r = compute(s);
    const gpufl__insight_t *x = one(&r, "gpu_idle");
    assert_int_equal(x->severity, GPUFL_SEVERITY_HIGH); /* 50 ms of 100 */
    ASSERT_NEAR(ev(x, "idle_ns"), 50e6);
    ASSERT_NEAR(ev(x, "idle_pct"), 50);
    ASSERT_NEAR(ev(x, "gaps"), 5);
    ASSERT_NEAR(ev(x, "gap1_ns"), 20e6);
    ASSERT_NEAR(ev(x, "gap1_start_ns"), 10e6);
    ASSERT_NEAR(ev(x, "gap2_ns"), 10e6); /* ties: the earlier first */
    ASSERT_NEAR(ev(x, "gap2_start_ns"), 50e6);
    ASSERT_NEAR(ev(x, "gap3_ns"), 10e6);
    ASSERT_NEAR(ev(x, "gap3_start_ns"), 80e6);
    expect_text(x->message, "20.0ms at 10.0ms (in scope train/load)");
    expect_text(x->message, "10.0ms at 50.0ms (in scope train)");
    done(&r);
}

/* ---------------------------------------------------------------------- */
/* throttling                                                               */
/* ---------------------------------------------------------------------- */

/* n busy samples (gpu_util 90%), the first `marked` of them carrying
 * `bits` at 1500 MHz (the rest at 1980 MHz, no bits); idle: idle samples
 * (util 0) with `bits` added. */
static run_t throttle_run(size_t n, size_t marked, int64_t bits, size_t idle, int flags) {
    sess_t *s = sess_new(flags);
    srow_t *v = calloc(n + idle, sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < n + idle; i++) {
        int busy = i < n, mark = i < marked || !busy;
        v[i] = (srow_t){busy ? 90 : 0, mark ? bits : 0, mark ? 1500 : 1980, -1};
    }
    put_samples(s, 0, v, n + idle);
    free(v);
    return compute(s);
}

#define BIT(b) (1LL << (b))

static void test_insights_throttling_thermal(void **state) {
    (void)state;
    /* sw thermal in 2 of 20 busy samples (10%): MEDIUM; 2 of 21 (9.5%): none */
    run_t r = throttle_run(20, 2, BIT(5), 0, 0);
    const gpufl__insight_t *x = one(&r, "throttling");
    assert_string_equal(x->category, "THERMAL");
    assert_int_equal(x->severity, GPUFL_SEVERITY_MEDIUM);
    expect_text(x->title, "10.0% of busy samples");
    ASSERT_NEAR(ev(x, "busy_samples"), 20);
    ASSERT_NEAR(ev(x, "thermal_pct"), 10);
    ASSERT_NEAR(ev(x, "sw_thermal_slowdown_pct"), 10);
    ASSERT_NEAR(ev(x, "hw_thermal_slowdown_pct"), 0);
    ASSERT_NEAR(ev(x, "sm_clock_slowed_mhz"), 1500);
    ASSERT_NEAR(ev(x, "sm_clock_unslowed_mhz"), 1980);
    ASSERT_NEAR(ev(x, "max_temp_c"), 79);
    done(&r);
    r = throttle_run(21, 2, BIT(5), 0, 0);
    assert_int_equal(count(&r, "throttling"), 0);
    done(&r);
    /* hardware thermal slowdown or hw_slowdown in 10%: HIGH */
    r = throttle_run(20, 2, BIT(6), 0, 0);
    assert_int_equal(one(&r, "throttling")->severity, GPUFL_SEVERITY_HIGH);
    done(&r);
    r = throttle_run(20, 2, BIT(3), 0, 0);
    x = one(&r, "throttling");
    assert_int_equal(x->severity, GPUFL_SEVERITY_HIGH);
    ASSERT_NEAR(ev(x, "hw_slowdown_pct"), 10);
    done(&r);
    r = throttle_run(21, 2, BIT(6), 0, 0);
    assert_int_equal(count(&r, "throttling"), 0);
    done(&r);
    /* idle samples do not count, nor do the idle and application-clocks bits */
    r = throttle_run(20, 0, BIT(5) | BIT(6), 30, 0);
    assert_int_equal(count(&r, "throttling"), 0);
    done(&r);
    r = throttle_run(20, 20, BIT(0) | BIT(1) | BIT(4) | BIT(8), 0, 0);
    assert_int_equal(count(&r, "throttling"), 0);
    assert_null(skip_why(&r, "throttling"));
    done(&r);
}

static void test_insights_throttling_power(void **state) {
    (void)state;
    /* sw power cap in 10%: LOW; in half: MEDIUM; the power brake in 10%: HIGH */
    run_t r = throttle_run(20, 2, BIT(2), 0, 0);
    const gpufl__insight_t *x = one(&r, "throttling");
    assert_string_equal(x->category, "POWER");
    assert_int_equal(x->severity, GPUFL_SEVERITY_LOW);
    ASSERT_NEAR(ev(x, "power_pct"), 10);
    ASSERT_NEAR(ev(x, "sw_power_cap_pct"), 10);
    ASSERT_NEAR(ev(x, "sm_clock_capped_mhz"), 1500);
    ASSERT_NEAR(ev(x, "mean_power_w"), 650);
    ASSERT_NEAR(ev(x, "power_limit_w"), 700);
    done(&r);
    r = throttle_run(21, 2, BIT(2), 0, 0);
    assert_int_equal(count(&r, "throttling"), 0);
    done(&r);
    r = throttle_run(20, 10, BIT(2), 0, 0);
    assert_int_equal(one(&r, "throttling")->severity, GPUFL_SEVERITY_MEDIUM);
    done(&r);
    r = throttle_run(20, 9, BIT(2), 0, 0);
    assert_int_equal(one(&r, "throttling")->severity, GPUFL_SEVERITY_LOW);
    done(&r);
    r = throttle_run(20, 2, BIT(7), 0, 0);
    x = one(&r, "throttling");
    assert_int_equal(x->severity, GPUFL_SEVERITY_HIGH);
    ASSERT_NEAR(ev(x, "hw_power_brake_pct"), 10);
    done(&r);
    /* both at once: one insight per category */
    r = throttle_run(20, 4, BIT(2) | BIT(5), 0, 0);
    assert_int_equal(count(&r, "throttling"), 2);
    assert_non_null(in_category(&r, "throttling", "THERMAL"));
    assert_non_null(in_category(&r, "throttling", "POWER"));
    done(&r);
}

static void test_insights_throttling_skips(void **state) {
    (void)state;
    /* 5 busy samples are enough, 4 are not */
    run_t r = throttle_run(5, 5, BIT(5), 0, 0);
    assert_int_equal(count(&r, "throttling"), 1);
    done(&r);
    r = throttle_run(4, 4, BIT(5), 10, 0);
    assert_int_equal(count(&r, "throttling"), 0);
    expect_text(skip_why(&r, "throttling"), "fewer than 5 busy samples");
    done(&r);
    r = throttle_run(20, 20, BIT(5), 0, S_NO_LEGEND);
    assert_int_equal(count(&r, "throttling"), 0);
    expect_text(skip_why(&r, "throttling"), "no gpu_legend");
    done(&r);
    r = throttle_run(20, 20, NUL, 0, 0);
    expect_text(skip_why(&r, "throttling"), "carry no throttle_reasons");
    done(&r);
}

/* ---------------------------------------------------------------------- */
/* low_sm_activity                                                          */
/* ---------------------------------------------------------------------- */

/* n samples at gpu_util `util` with sm_active `active` (< 0: null); with
 * kernels: two kernels, one of 66 blocks (fewer than the 132 SMs). */
static run_t gpm_run(size_t n, int64_t util, double active, int flags, int kernels) {
    sess_t *s = sess_new(flags);
    srow_t v[32];
    assert_true(n <= 32);
    for (size_t i = 0; i < n; i++) v[i] = (srow_t){util, 0, 0, active};
    put_samples(s, 0, v, n);
    if (kernels) {
        krow_t k[2] = {{.start = MS, .end = 4 * MS, .grid = 66},
                       {.start = 5 * MS, .end = 6 * MS, .grid = 264}};
        put_kernels(s, k, 2);
    }
    return compute(s);
}

static void test_insights_low_sm_activity(void **state) {
    (void)state;
    run_t r = gpm_run(5, 100, 49, 0, 1);
    const gpufl__insight_t *x = one(&r, "low_sm_activity");
    assert_string_equal(x->category, "UTILIZATION");
    assert_int_equal(x->severity, GPUFL_SEVERITY_MEDIUM);
    expect_text(x->title, "reads 100% utilised but its SMs were active 49.0%");
    expect_text(x->message, "75.0% of its kernel time went to kernels launching fewer blocks "
                            "than its 132 SMs");
    ASSERT_NEAR(ev(x, "samples"), 5);
    ASSERT_NEAR(ev(x, "mean_gpu_util_pct"), 100);
    ASSERT_NEAR(ev(x, "mean_sm_active_pct"), 49);
    ASSERT_NEAR(ev(x, "mean_sm_occupancy_pct"), 12.5);
    ASSERT_NEAR(ev(x, "small_grid_kernel_pct"), 75);
    done(&r);
    r = gpm_run(5, 100, 50, 0, 0);
    assert_int_equal(count(&r, "low_sm_activity"), 0);
    assert_null(skip_why(&r, "low_sm_activity"));
    done(&r);
    r = gpm_run(5, 80, 24.9, 0, 0);
    x = one(&r, "low_sm_activity");
    assert_int_equal(x->severity, GPUFL_SEVERITY_HIGH);
    assert_false(has_ev(x, "small_grid_kernel_pct"));
    done(&r);
    r = gpm_run(5, 80, 25, 0, 0);
    assert_int_equal(one(&r, "low_sm_activity")->severity, GPUFL_SEVERITY_MEDIUM);
    done(&r);
    /* utilisation below 80% is not "reads high"; 4 samples are too few */
    r = gpm_run(5, 79, 10, 0, 0);
    assert_int_equal(count(&r, "low_sm_activity"), 0);
    expect_text(skip_why(&r, "low_sm_activity"), "fewer than 5 samples");
    done(&r);
    r = gpm_run(4, 100, 10, 0, 0);
    assert_int_equal(count(&r, "low_sm_activity"), 0);
    expect_text(skip_why(&r, "low_sm_activity"), "fewer than 5 samples");
    done(&r);
    /* no GPM values */
    r = gpm_run(10, 100, -1, 0, 0);
    expect_text(skip_why(&r, "low_sm_activity"),
                "no GPM samples: GPM needs Hopper or newer and NVML GPM support");
    assert_null(strstr(skip_why(&r, "low_sm_activity"), "gpm_supported"));
    done(&r);
    r = gpm_run(10, 100, -1, S_NO_GPM, 0);
    expect_text(skip_why(&r, "low_sm_activity"), "(gpu_info: gpm_supported is false)");
    done(&r);
}

/* ---------------------------------------------------------------------- */
/* Sessions without GPU data; determinism                                   */
/* ---------------------------------------------------------------------- */

static void test_insights_no_gpu_data(void **state) {
    (void)state;
    static const int flags[] = {S_EMPTY, S_NO_TRACE, S_NO_INFO | S_NO_LEGEND};
    for (size_t f = 0; f < sizeof flags / sizeof flags[0]; f++) {
        sess_t *s = sess_new(flags[f]);
        sess_end(s, 1000 * MS);
        run_t r = compute(s);
        for (size_t i = 0; i < N_MY_RULES; i++) {
            assert_int_equal(count(&r, my_rules[i]), 0);
            const char *why = skip_why(&r, my_rules[i]);
            if (!why) fail_msg("%s: not skipped", my_rules[i]);
            assert_true(strlen(why) > 10);
            size_t n = 0; /* skipped once */
            for (size_t j = 0; j < r.in.n_skipped; j++)
                n += strcmp(r.in.skipped[j].rule, my_rules[i]) == 0;
            assert_int_equal(n, 1);
        }
        expect_text(skip_why(&r, "low_occupancy"), "no kernel rows: the Trace engine did not run");
        expect_text(skip_why(&r, "gpu_idle"), "no kernel, copy or memset rows");
        expect_text(skip_why(&r, "throttling"), "no gpu_sample rows");
        expect_text(skip_why(&r, "low_sm_activity"), "no gpu_sample rows");
        if (flags[f] & S_NO_TRACE)
            expect_text(skip_why(&r, "launch_bound"), "(engine Monitor runs no CUPTI)");
        done(&r);
    }
    /* copies but no kernels: the kernel rules say so, gpu_idle judges */
    sess_t *s = sess_new(0);
    crow_t cp = {MS, 2 * MS, 1 << 20, 1, 2, 3};
    put_copies(s, &cp, 1);
    run_t r = compute(s);
    expect_text(skip_why(&r, "register_spill"), "the Trace engine recorded no kernel");
    assert_null(skip_why(&r, "gpu_idle"));
    assert_null(skip_why(&r, "memcpy_bound"));
    done(&r);
}

/* A session where most rules fire at once. */
static run_t busy_session(void) {
    sess_t *s = sess_new(0);
    cfg_t c = reg_cfg(72, 3);
    put_config(s, 1, &c);
    cfg_t c2 = occ_cfg(8);
    put_config(s, 2, &c2);
    krow_t k[150];
    memset(k, 0, sizeof k);
    for (size_t i = 0; i < 150; i++) {
        k[i].start = 100 * MS + (int64_t)i * 6 * US;
        k[i].end = k[i].start + 2 * US;
        k[i].name = 4;
        k[i].launch = k[i].start - US;
    }
    k[0] = (krow_t){.start = 10 * MS, .end = 40 * MS, .name = 1, .config = 1, .local = 64};
    k[1] = (krow_t){.start = 50 * MS, .end = 60 * MS, .name = 1, .config = 2};
    put_kernels(s, k, 150);
    crow_t cp[2] = {{0, 5 * MS, 8 << 20, 1, 1, 3}, {70 * MS, 80 * MS, 64 << 20, 2, 3, 2}};
    put_copies(s, cp, 2);
    srow_t v[20];
    for (size_t i = 0; i < 20; i++) v[i] = (srow_t){100, i < 5 ? BIT(6) | BIT(2) : 0, 0, 30};
    put_samples(s, 0, v, 20);
    sess_end(s, 200 * MS);
    return compute(s);
}

static void test_insights_deterministic(void **state) {
    (void)state;
    run_t a = busy_session(), b = busy_session();
    assert_true(a.in.n >= 8);
    assert_int_equal(a.in.n, b.in.n);
    assert_int_equal(a.in.n_skipped, b.in.n_skipped);
    for (size_t i = 0; i < a.in.n; i++) {
        const gpufl__insight_t *x = &a.in.items[i], *y = &b.in.items[i];
        assert_string_equal(x->rule, y->rule);
        assert_string_equal(x->category, y->category);
        assert_int_equal(x->severity, y->severity);
        assert_string_equal(x->title, y->title);
        assert_string_equal(x->message, y->message);
        assert_string_equal(x->advice, y->advice);
        assert_true(x->weight == y->weight);
        assert_int_equal(x->n_evidence, y->n_evidence);
        for (size_t e = 0; e < x->n_evidence; e++) {
            assert_string_equal(x->evidence[e].name, y->evidence[e].name);
            assert_string_equal(x->evidence[e].unit, y->evidence[e].unit);
            assert_true(x->evidence[e].value == y->evidence[e].value);
        }
        if (i) assert_true(a.in.items[i - 1].severity >= x->severity); /* HIGH first */
        assert_non_null(x->title);
        assert_non_null(x->message);
        assert_non_null(x->advice);
    }
    for (size_t i = 0; i < a.in.n_skipped; i++) {
        assert_string_equal(a.in.skipped[i].rule, b.in.skipped[i].rule);
        assert_string_equal(a.in.skipped[i].why, b.in.skipped[i].why);
    }
    /* the rules that fire here */
    static const char *const fired[] = {"launch_bound",   "low_occupancy",  "register_limited",
                                        "register_spill", "memcpy_bound",   "pageable_memcpy",
                                        "gpu_idle",       "low_sm_activity"};
    for (size_t i = 0; i < sizeof fired / sizeof fired[0]; i++)
        if (!count(&a, fired[i])) fail_msg("%s did not fire", fired[i]);
    assert_non_null(in_category(&a, "throttling", "THERMAL"));
    assert_non_null(in_category(&a, "throttling", "POWER"));
    done(&a);
    done(&b);
}

/* ---------------------------------------------------------------------- */
/* SYNCHRONIZATION: sync attribution and in-loop sync                       */
/* ---------------------------------------------------------------------- */

/* Frames: 1 in libcuda, 2 train.cu:90 and 4 train.cu:120 in train_step (built
 * with -g), 3 main.cu:10. Stacks, innermost first: 1 the sync at line 90, 2
 * the one at line 120, 3 a sync with no application frame, 4 a launch. */
static void put_stacks(sess_t *s) {
    put(s, "{\"type\":\"frame\",\"v\":1,\"id\":1,\"pc\":\"0x7f0000001000\","
           "\"module\":\"/usr/lib/x86_64-linux-gnu/libcuda.so.1\",\"offset\":\"0x1000\","
           "\"function\":\"cuStreamSynchronize\",\"file\":null}\n");
    put(s, "{\"type\":\"frame\",\"v\":1,\"id\":2,\"pc\":\"0x401090\",\"module\":\"/app/train\","
           "\"offset\":\"0x1090\",\"function\":\"train_step(float*)\",\"file\":\"/src/train.cu\","
           "\"line\":90,\"source\":\"    cudaStreamSynchronize(s);\"}\n");
    put(s, "{\"type\":\"frame\",\"v\":1,\"id\":3,\"pc\":\"0x401010\",\"module\":\"/app/train\","
           "\"offset\":\"0x1010\",\"function\":\"main\",\"file\":\"/src/main.cu\",\"line\":10}\n");
    put(s, "{\"type\":\"frame\",\"v\":1,\"id\":4,\"pc\":\"0x401120\",\"module\":\"/app/train\","
           "\"offset\":\"0x1120\",\"function\":\"train_step(float*)\",\"file\":\"/src/train.cu\","
           "\"line\":120}\n");
    put(s, "{\"type\":\"stack\",\"v\":1,\"id\":1,\"frames\":[1,2,3]}\n");
    put(s, "{\"type\":\"stack\",\"v\":1,\"id\":2,\"frames\":[1,4,3]}\n");
    put(s, "{\"type\":\"stack\",\"v\":1,\"id\":3,\"frames\":[1]}\n");
    put(s, "{\"type\":\"stack\",\"v\":1,\"id\":4,\"frames\":[1,3]}\n");
}

typedef struct srow_sync {
    int64_t start, end, corr, stack, tid;
} sync_row_t;

/* A sync batch of cudaStreamSynchronize calls. */
static void put_syncs(sess_t *s, const sync_row_t *r, size_t n) {
    put(s, "{\"type\":\"sync\",\"v\":1");
    COL(s, "start_ns", n, r[i_].start);
    COL(s, "end_ns", n, r[i_].end);
    COL(s, "sync_type", n, 3);
    COL(s, "context", n, 1);
    COL(s, "stream", n, 7);
    COL(s, "event", n, NUL);
    COL(s, "correlation", n, r[i_].corr);
    COL(s, "scope", n, NUL);
    COL(s, "tid", n, r[i_].tid ? r[i_].tid : 42);
    COL(s, "stack", n, r[i_].stack ? r[i_].stack : NUL);
    put(s, "}\n");
}

/* n kernels of 1 us with these correlation ids, launched by thread tid[i]. */
static void put_launches(sess_t *s, const int64_t *corr, const int64_t *tid, size_t n) {
    put(s, "{\"type\":\"kernel\",\"v\":1");
    COL(s, "start_ns", n, corr[i_] * US);
    COL(s, "end_ns", n, corr[i_] * US + US);
    COL(s, "device", n, 0);
    COL(s, "context", n, 1);
    COL(s, "stream", n, 7);
    COL(s, "correlation", n, corr[i_]);
    COL(s, "name", n, 3);
    COL(s, "grid_x", n, 1024);
    COL(s, "grid_y", n, 1);
    COL(s, "grid_z", n, 1);
    COL(s, "block_x", n, 256);
    COL(s, "block_y", n, 1);
    COL(s, "block_z", n, 1);
    COL(s, "registers", n, 32);
    COL(s, "static_smem_bytes", n, 0);
    COL(s, "dynamic_smem_bytes", n, 0);
    COL(s, "launch_ns", n, corr[i_] * US - 500);
    COL(s, "tid", n, tid ? tid[i_] : 42);
    COL(s, "stack", n, 4);
    put(s, "}\n");
}

/* The same launches as launch rows (engines PcSampling and Deep: the host's
 * launch calls, no kernel rows), naming kernel_config `config` (0: null). */
static void put_launch_rows(sess_t *s, const int64_t *corr, const int64_t *tid, size_t n,
                            int64_t config) {
    put(s, "{\"type\":\"launch\",\"v\":1");
    COL(s, "ts_ns", n, corr[i_] * US - 500);
    COL(s, "tid", n, tid ? tid[i_] : 42);
    COL(s, "context", n, 1);
    COL(s, "correlation", n, corr[i_]);
    COL(s, "config", n, config ? config : NUL);
    COL(s, "scope", n, NUL);
    COL(s, "external_kind", n, NUL);
    COL(s, "external_id", n, NUL);
    COL(s, "stack", n, 4);
    put(s, "}\n");
}

/* One sync line (stack 1) of `calls` calls blocking `blocked` ns in all, in
 * a session of 100 ms; no kernels. */
static run_t attribution_run(int calls, int64_t blocked) {
    sess_t *s = sess_new(0);
    put_stacks(s);
    sync_row_t r[8];
    for (int i = 0; i < calls; i++) {
        int64_t each = blocked / calls + (i < blocked % calls);
        r[i] = (sync_row_t){i * 20 * MS, i * 20 * MS + each, 100 + i, 1, 0};
    }
    put_syncs(s, r, (size_t)calls);
    sess_end(s, 100 * MS);
    return compute(s);
}

/* Severity from the line's share of session wall time: > 50 % HIGH, > 10 %
 * MEDIUM, else LOW; the title names the API, calls, file:line, time, share. */
static void test_insights_sync_attribution(void **state) {
    (void)state;
    static const struct {
        int64_t blocked;
        gpufl_severity_t sev;
        const char *title;
    } cases[] = {
        {50100000, GPUFL_SEVERITY_HIGH,
         "cudaStreamSynchronize \xc3\x97 3 @ train.cu:90 \xc2\xb7 50.1ms (50.1% of session)"},
        {50000000, GPUFL_SEVERITY_MEDIUM,
         "cudaStreamSynchronize \xc3\x97 3 @ train.cu:90 \xc2\xb7 50.0ms (50.0% of session)"},
        {10100000, GPUFL_SEVERITY_MEDIUM,
         "cudaStreamSynchronize \xc3\x97 3 @ train.cu:90 \xc2\xb7 10.1ms (10.1% of session)"},
        {10000000, GPUFL_SEVERITY_LOW,
         "cudaStreamSynchronize \xc3\x97 3 @ train.cu:90 \xc2\xb7 10.0ms (10.0% of session)"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        run_t r = attribution_run(3, cases[c].blocked);
        const gpufl__insight_t *x = one(&r, "sync_attribution");
        assert_string_equal(x->category, "SYNCHRONIZATION");
        assert_int_equal(x->severity, cases[c].sev);
        assert_string_equal(x->title, cases[c].title);
        assert_string_equal(x->file, "/src/train.cu");
        assert_int_equal(x->line, 90);
        assert_string_equal(x->function, "train_step(float*)");
        assert_string_equal(x->source, "    cudaStreamSynchronize(s);");
        ASSERT_NEAR(ev(x, "blocked_ns"), (double)cases[c].blocked);
        ASSERT_NEAR(ev(x, "calls"), 3);
        /* no kernels: nothing to count between the calls */
        assert_int_equal(count(&r, "in_loop_sync"), 0);
        expect_text(skip_why(&r, "in_loop_sync"), "no kernel rows");
        done(&r);
    }
}

/* Python frames (the gpufl package's provider): a frame of library code
 * (torch's) is never the site; the innermost Python frame of the program
 * is, and an interpreted frame that does not say whether it is library code
 * is not taken for the program's. */
static void test_insights_sync_python_site(void **state) {
    (void)state;
    sess_t *s = sess_new(0);
    put_stacks(s);
    put(s, "{\"type\":\"frame\",\"v\":1,\"id\":10,\"pc\":\"0x8000000002000010\","
           "\"module\":null,\"function\":\"synchronize\","
           "\"file\":\"/venv/lib/python3.12/site-packages/torch/cuda/__init__.py\","
           "\"line\":985,\"language\":\"python\",\"library\":true}\n");
    put(s, "{\"type\":\"frame\",\"v\":1,\"id\":11,\"pc\":\"0x8000000003000045\","
           "\"module\":null,\"function\":\"Trainer.step\",\"file\":\"/src/train.py\","
           "\"line\":69,\"language\":\"python\",\"library\":false,"
           "\"source\":\"        torch.cuda.synchronize()\"}\n");
    put(s, "{\"type\":\"frame\",\"v\":1,\"id\":12,\"pc\":\"0x8000000004000001\","
           "\"module\":null,\"function\":\"<module>\",\"file\":\"/src/run.py\","
           "\"line\":1,\"language\":\"python\"}\n");
    put(s, "{\"type\":\"stack\",\"v\":1,\"id\":5,\"frames\":[1,10,11,12]}\n");
    put(s, "{\"type\":\"stack\",\"v\":1,\"id\":6,\"frames\":[1,10,12]}\n");
    sync_row_t r[] = {
        {0, 30 * MS, 100, 5, 0}, {40 * MS, 70 * MS, 101, 5, 0}, {80 * MS, 85 * MS, 102, 6, 0}};
    put_syncs(s, r, 3);
    sess_end(s, 100 * MS);
    run_t run = compute(s);
    assert_int_equal(count(&run, "sync_attribution"), 2);
    const gpufl__insight_t *x = &run.in.items[0], *internal = &run.in.items[1];
    expect_text(internal->title, "\xc3\x97 1 @ <driver-internal> ");
    assert_string_equal(x->file, "/src/train.py");
    assert_int_equal(x->line, 69);
    assert_string_equal(x->function, "Trainer.step");
    assert_string_equal(x->source, "        torch.cuda.synchronize()");
    ASSERT_NEAR(ev(x, "calls"), 2);
    expect_text(x->title, "train.py:69");
    done(&run);
}

/* Two lines, a call with no application frame and one with no stack: one
 * insight each, the longest first; <driver-internal> and <no stack> named. */
static void test_insights_sync_sites(void **state) {
    (void)state;
    sess_t *s = sess_new(0);
    put_stacks(s);
    const sync_row_t r[] = {
        {0, 30 * MS, 10, 2, 0},       {40 * MS, 41 * MS, 20, 1, 0},
        {50 * MS, 52 * MS, 30, 3, 0}, {60 * MS, 60 * MS + 5, 40, 0, 0},
        {70 * MS, 71 * MS, 50, 1, 0},
    };
    put_syncs(s, r, sizeof r / sizeof r[0]);
    sess_end(s, 100 * MS);
    run_t x = compute(s);
    assert_int_equal(count(&x, "sync_attribution"), 4);
    const gpufl__insight_t *first = &x.in.items[0];
    assert_int_equal(first->severity, GPUFL_SEVERITY_MEDIUM); /* 30 % */
    expect_text(first->title, "\xc3\x97 1 @ train.cu:120 ");
    int internal = 0, no_stack = 0;
    for (size_t i = 0; i < x.in.n; i++) {
        const gpufl__insight_t *y = &x.in.items[i];
        if (strstr(y->title, "@ <driver-internal> ")) {
            internal++;
            assert_null(y->file);
            expect_text(y->advice, "CUDA runtime or driver");
        }
        if (strstr(y->title, "@ <no stack> ")) no_stack++;
        if (strstr(y->title, "train.cu:90")) expect_text(y->title, "\xc3\x97 2 @ ");
    }
    assert_int_equal(internal, 1);
    assert_int_equal(no_stack, 1);
    done(&x);
}

/* One line of `calls` syncs; between consecutive ones, between[i] kernels of
 * the syncing thread and other[i] of another thread. */
static run_t loop_run_as(int calls, const int *between, const int *other, int launch_rows) {
    sess_t *s = sess_new(0);
    put_stacks(s);
    int64_t corr[256], tid[256];
    sync_row_t r[16];
    size_t n = 0;
    int64_t c = 1;
    for (int i = 0; i < calls; i++) {
        r[i] = (sync_row_t){(int64_t)i * 10 * MS, (int64_t)i * 10 * MS + MS, c++, 1, 0};
        if (i + 1 == calls) break;
        for (int k = 0; k < between[i]; k++) corr[n] = c++, tid[n++] = 42;
        for (int k = 0; other && k < other[i]; k++) corr[n] = c++, tid[n++] = 43;
    }
    if (n && launch_rows)
        put_launch_rows(s, corr, tid, n, 0);
    else if (n)
        put_launches(s, corr, tid, n);
    put_syncs(s, r, (size_t)calls);
    sess_end(s, 100 * MS);
    return compute(s);
}

static run_t loop_run(int calls, const int *between, const int *other) {
    return loop_run_as(calls, between, other, 0);
}

/* In-loop: >= 3 syncs from one line and a median of >= 3 distinct kernel
 * launches between consecutive ones (the syncing thread's own). */
static void test_insights_in_loop_sync(void **state) {
    (void)state;
    static const int three[] = {3, 3, 3, 3}, two[] = {2, 2, 2, 2}, mixed[] = {2, 3, 9},
                     low[] = {2, 2, 9}, even[] = {2, 4}, even_low[] = {2, 3}, others[] = {5, 5, 5};
    /* fires: 4 calls, 3 launches between each */
    run_t r = loop_run(4, three, NULL);
    const gpufl__insight_t *x = one(&r, "in_loop_sync");
    assert_int_equal(x->severity, GPUFL_SEVERITY_MEDIUM);
    assert_string_equal(x->title,
                        "In-loop sync \xc3\x97 4 \xe2\x80\x94 likely blocking GPU pipelining");
    expect_text(x->message, "train.cu:90 in train_step(float*)");
    expect_text(x->advice, "after the loop");
    expect_text(x->advice, "CUDA graph");
    assert_int_equal(x->line, 90);
    ASSERT_NEAR(ev(x, "median_launches_between"), 3);
    done(&r);
    /* 3 calls, the least, fire; the median, not the mean, is judged */
    r = loop_run(3, three, NULL);
    ASSERT_NEAR(ev(one(&r, "in_loop_sync"), "median_launches_between"), 3);
    done(&r);
    r = loop_run(4, mixed, NULL);
    ASSERT_NEAR(ev(one(&r, "in_loop_sync"), "median_launches_between"), 3);
    done(&r);
    r = loop_run(4, low, NULL);
    assert_int_equal(count(&r, "in_loop_sync"), 0);
    assert_null(skip_why(&r, "in_loop_sync")); /* judged, did not fire */
    done(&r);
    r = loop_run(4, two, NULL);
    assert_int_equal(count(&r, "in_loop_sync"), 0);
    done(&r);
    /* an even number of gaps takes the mean of the middle two */
    r = loop_run(3, even, NULL);
    ASSERT_NEAR(ev(one(&r, "in_loop_sync"), "median_launches_between"), 3);
    done(&r);
    r = loop_run(3, even_low, NULL);
    assert_int_equal(count(&r, "in_loop_sync"), 0);
    done(&r);
    /* two calls are too few, however much work lies between */
    r = loop_run(2, three, NULL);
    assert_int_equal(count(&r, "in_loop_sync"), 0);
    expect_text(skip_why(&r, "in_loop_sync"), "3 or more");
    done(&r);
    /* launches by any thread count (spec 003: kernel correlations between
     * the calls): a producer thread feeding a synchronizing one */
    r = loop_run(4, two, others);
    ASSERT_NEAR(ev(one(&r, "in_loop_sync"), "median_launches_between"), 7);
    done(&r);
    /* without kernel rows (PcSampling, Deep), the launch rows are counted */
    r = loop_run_as(4, three, NULL, 1);
    assert_int_equal(r.m->n_kernels, 0);
    assert_int_equal(r.m->n_launches, 9);
    ASSERT_NEAR(ev(one(&r, "in_loop_sync"), "median_launches_between"), 3);
    done(&r);
    r = loop_run_as(4, low, NULL, 1);
    assert_int_equal(count(&r, "in_loop_sync"), 0);
    assert_null(skip_why(&r, "in_loop_sync"));
    done(&r);
}

/* Launch rows and no kernel rows (PcSampling, Deep): the rules that need
 * kernel GPU times are not judged and say why; occupancy is judged from
 * kernel_config records weighted by launch count. */
static void test_insights_launch_rows(void **state) {
    (void)state;
    static const char *const untimed[] = {"launch_bound", "gpu_idle", "register_spill",
                                          "memcpy_bound", "pageable_memcpy"};
    /* n launches of config 1 (target, 23.4% occupancy) and 10 - n of
     * config 2 (the same function at 100%). */
    cfg_t low = {160, 32, 65536, 3, 15, 64, 12, 12, 3, 32, "shared_memory", NULL};
    cfg_t full = {256, 32, 0, 8, 64, 64, 8, 8, 32, 32, "warps", NULL};
    int64_t corr[10], tid[10];
    for (int i = 0; i < 10; i++) corr[i] = 10 + i, tid[i] = 42;
    static const size_t lows[] = {1, 3}; /* of 10 launches: 10 % and 30 % */
    for (size_t k = 0; k < 2; k++) {
        sess_t *s = sess_new(0);
        put_config(s, 1, &low);
        put_config(s, 2, &full);
        size_t n_low = lows[k];
        put_launch_rows(s, corr, tid, n_low, 1);
        put_launch_rows(s, corr + n_low, tid, 10 - n_low, 2);
        sess_end(s, 100 * MS);
        run_t r = compute(s);
        for (size_t i = 0; i < sizeof untimed / sizeof untimed[0]; i++) {
            assert_int_equal(count(&r, untimed[i]), 0);
            expect_text(skip_why(&r, untimed[i]), "needs kernel GPU times");
            expect_text(skip_why(&r, untimed[i]), "`launch`");
        }
        const gpufl__insight_t *x = one(&r, "low_occupancy");
        assert_string_equal(x->kernel, "target(float*)");
        ASSERT_NEAR(ev(x, "launches"), (double)n_low);
        ASSERT_NEAR(ev(x, "launch_share_pct"), 10.0 * (double)n_low);
        ASSERT_NEAR(x->weight, (double)n_low);
        assert_false(has_ev(x, "kernel_ns"));
        expect_text(x->message, "weighted by launch count");
        assert_int_equal(x->severity, GPUFL_SEVERITY_LOW);
        assert_null(skip_why(&r, "low_occupancy"));
        done(&r);
    }
    /* under 5 % of the launches: negligible, judged */
    sess_t *s = sess_new(0);
    put_config(s, 1, &low);
    put_config(s, 2, &full);
    int64_t many[40], tids[40];
    for (int i = 0; i < 40; i++) many[i] = 10 + i, tids[i] = 42;
    put_launch_rows(s, many, tids, 1, 1); /* 2.5 % */
    put_launch_rows(s, many + 1, tids, 39, 2);
    sess_end(s, 100 * MS);
    run_t r = compute(s);
    assert_int_equal(count(&r, "low_occupancy"), 0);
    assert_null(skip_why(&r, "low_occupancy"));
    done(&r);
}

/* Without stacks or without syncs the rules say why they did not judge. */
static void test_insights_sync_skips(void **state) {
    (void)state;
    sess_t *s = sess_new(0);
    const sync_row_t r[] = {{0, MS, 1, 0, 0}, {2 * MS, 3 * MS, 2, 0, 0}};
    put_syncs(s, r, 2);
    sess_end(s, 10 * MS);
    run_t x = compute(s);
    assert_int_equal(count(&x, "sync_attribution"), 0);
    expect_text(skip_why(&x, "sync_attribution"), "enable_stack_trace");
    expect_text(skip_why(&x, "in_loop_sync"), "no CPU stacks");
    done(&x);
    x = compute(sess_new(0));
    expect_text(skip_why(&x, "sync_attribution"), "no synchronization rows");
    done(&x);
}

/* The shared median: odd and even counts, ties, any order, against a sort. */
static void test_insights_median(void **state) {
    (void)state;
    assert_true(gpufl__insight_median_i64(NULL, 0) == 0);
    int64_t one[] = {7};
    assert_true(gpufl__insight_median_i64(one, 1) == 7);
    int64_t two[] = {9, 3};
    assert_true(gpufl__insight_median_i64(two, 2) == 6);
    int64_t ties[] = {5, 5, 5, 1, 5, 9};
    assert_true(gpufl__insight_median_i64(ties, 6) == 5);
    unsigned seed = 12345;
    for (size_t n = 1; n < 200; n++) {
        int64_t v[200], sorted[200];
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            v[i] = sorted[i] = (int64_t)(seed >> 16) % 50; /* many ties */
        }
        for (size_t i = 1; i < n; i++) /* insertion sort: the reference */
            for (size_t j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
                int64_t t = sorted[j];
                sorted[j] = sorted[j - 1];
                sorted[j - 1] = t;
            }
        double want =
            n % 2 ? (double)sorted[n / 2] : ((double)sorted[n / 2 - 1] + (double)sorted[n / 2]) / 2;
        assert_true(gpufl__insight_median_i64(v, n) == want);
    }
}

/* ---------------------------------------------------------------------- */
/* dominant_stall                                                           */
/* ---------------------------------------------------------------------- */

/* PC samples of target (stalled: long_scoreboard, the rest selected) and of
 * filler (all selected), in one window. */
static run_t stall_run(int64_t target, int64_t stalled, int64_t filler) {
    sess_t *s = sess_new(0);
    put(s, "{\"type\":\"dict\",\"v\":1,\"id\":[10,11],\"str\":["
           "\"smsp__pcsamp_warps_issue_stalled_long_scoreboard\","
           "\"smsp__pcsamp_warps_issue_stalled_selected\"]}\n");
    put(s, "{\"type\":\"pc_sampling\",\"v\":1,\"ts_ns\":0,\"device\":0,\"context\":1,"
           "\"period\":16,\"mode\":\"continuous\",\"worker_sleep_ms\":100,\"reasons\":[],"
           "\"late\":false}\n");
    put(s,
        "{\"type\":\"pc_sample\",\"v\":1,\"t0_ns\":[0,0,0],\"t1_ns\":[%lld,%lld,%lld],"
        "\"context\":[1,1,1],\"cubin\":[0,0,0],\"function\":[1,1,3],\"demangled\":[2,2,3],"
        "\"pc\":[16,0,0],\"reason\":[10,11,11],\"samples\":[%lld,%lld,%lld]}\n",
        250 * MS, 250 * MS, 250 * MS, (long long)stalled, (long long)(target - stalled),
        (long long)filler);
    sess_end(s, 300 * MS);
    return compute(s);
}

static void test_insights_dominant_stall(void **state) {
    (void)state;
    static const struct {
        int64_t target, stalled, filler;
        int fires;
        gpufl_severity_t sev;
    } cases[] = {
        {999, 900, 0, 0, 0},                        /* below 1000 samples */
        {1000, 900, 0, 1, GPUFL_SEVERITY_HIGH},     /* at 1000 */
        {1000, 800, 99100, 0, 0},                   /* 0.999 % of the session */
        {1000, 800, 99000, 1, GPUFL_SEVERITY_HIGH}, /* 1 % */
        {1000, 399, 0, 0, 0},                       /* 39.9 % */
        {1000, 400, 0, 1, GPUFL_SEVERITY_MEDIUM},   /* 40 % */
        {1000, 599, 0, 1, GPUFL_SEVERITY_MEDIUM},   /* 59.9 % */
        {1000, 600, 0, 1, GPUFL_SEVERITY_HIGH},     /* 60 % */
        {1000, 0, 0, 0, 0},                         /* all selected: issuing is no stall */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_t r = stall_run(cases[i].target, cases[i].stalled, cases[i].filler);
        if (count(&r, "dominant_stall") != (size_t)cases[i].fires)
            fail_msg("case %zu: %zu insights", i, count(&r, "dominant_stall"));
        if (cases[i].fires) {
            const gpufl__insight_t *x = one(&r, "dominant_stall");
            assert_int_equal(x->severity, cases[i].sev);
            assert_string_equal(x->category, "STALL");
            assert_string_equal(x->kernel, "target(float*)");
            expect_text(x->title, "long_scoreboard");
            expect_text(x->advice, "coalesced");
            expect_text(x->message, "+0x10"); /* no sass: the instruction */
            ASSERT_NEAR(ev(x, "reason_pct"), 100.0 * cases[i].stalled / cases[i].target);
            ASSERT_NEAR(ev(x, "samples"), (double)cases[i].target);
        }
        assert_null(skip_why(&r, "dominant_stall"));
        done(&r);
    }
    /* No PC samples: skipped, saying why. */
    sess_t *s = sess_new(0);
    sess_end(s, MS);
    run_t r = compute(s);
    assert_int_equal(count(&r, "dominant_stall"), 0);
    assert_non_null(skip_why(&r, "dominant_stall"));
    expect_text(skip_why(&r, "dominant_stall"), "no pc_sample rows");
    done(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_insights_median),
        cmocka_unit_test(test_insights_sync_attribution),
        cmocka_unit_test(test_insights_sync_python_site),
        cmocka_unit_test(test_insights_sync_sites),
        cmocka_unit_test(test_insights_in_loop_sync),
        cmocka_unit_test(test_insights_sync_skips),
        cmocka_unit_test(test_insights_low_occupancy),
        cmocka_unit_test(test_insights_occupancy_advice),
        cmocka_unit_test(test_insights_register_limited),
        cmocka_unit_test(test_insights_occupancy_skips),
        cmocka_unit_test(test_insights_register_spill),
        cmocka_unit_test(test_insights_launch_bound),
        cmocka_unit_test(test_insights_memcpy_bound),
        cmocka_unit_test(test_insights_pageable_memcpy),
        cmocka_unit_test(test_insights_pageable_memcpy_untimed),
        cmocka_unit_test(test_insights_gpu_idle),
        cmocka_unit_test(test_insights_gpu_idle_gaps),
        cmocka_unit_test(test_insights_throttling_thermal),
        cmocka_unit_test(test_insights_throttling_power),
        cmocka_unit_test(test_insights_throttling_skips),
        cmocka_unit_test(test_insights_low_sm_activity),
        cmocka_unit_test(test_insights_no_gpu_data),
        cmocka_unit_test(test_insights_deterministic),
        cmocka_unit_test(test_insights_dominant_stall),
        cmocka_unit_test(test_insights_launch_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
