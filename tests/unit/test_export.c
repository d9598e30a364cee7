// SPDX-License-Identifier: Apache-2.0
/*
 * test_export.c - the trace exporters (lib/analysis/export_*.c) on a small
 * hand-written session: kernels on two streams with launch times, threads
 * and stacks, a copy, scopes on two threads, syncs, GPU and host samples.
 * The Chrome JSON is read back with jansson; the Perfetto trace with a
 * minimal protobuf reader written here, so CI needs no protobuf tools. The
 * CTF trace's packets are checked byte by byte here; babeltrace2 reads the
 * CTF traces of every fixture session in tests/cli/test_export_ctf.py.
 */
#include "test_util.h"

#include "analysis/export_pb.h"
#include "analysis/export_trace.h"
#include "analysis/model.h"

#include <stddef.h>
#include <sys/stat.h>

/* ---------------------------------------------------------------------- */
/* The session                                                              */
/* ---------------------------------------------------------------------- */

#define HEADER(file)                                                                               \
    "{\"type\":\"header\",\"v\":1,\"format\":\"gpufl-log\",\"file\":\"" file "\","                 \
    "\"segment\":0,\"session_id\":\"20261122T000000.000Z-4242-abcd\",\"app_name\":\"exp_app\","    \
    "\"pid\":4242,\"hostname\":\"node1\",\"epoch_ns\":\"5000000000\","                             \
    "\"epoch_unix_us\":1795305600000000,\"clock\":\"monotonic\",\"gpufl_version\":\"0.1.0\"}\n"

/* The name with a quote, angle brackets and a backslash: k<"a">\b */
#define ODD_NAME "k<\"a\">\\b"

static const char device_log[] = HEADER(
    "device") "{\"type\":\"dict\",\"v\":1,\"id\":[1,2,3,4],\"str\":[\"_Z5trainv\",\"k<\\\"a\\\">"
              "\\\\b\","
              "\"_Z4stepv\",\"step()\"]}\n"
              "{\"type\":\"gpu_info\",\"v\":1,\"device\":0,\"nvml_index\":0,\"mig_index\":null,"
              "\"name\":\"NVIDIA H100\",\"uuid\":\"GPU-1\",\"pci_bus_id\":\"0:1B:0.0\","
              "\"compute_capability\":\"9.0\",\"sm_count\":132,\"mem_total_bytes\":85520809984,"
              "\"driver_version\":\"580\",\"cuda_driver_version\":13000,\"mig_mode\":0,"
              "\"gpm_supported\":1,\"nvlink_links\":0,\"power_limit_mw\":700000,\"nvml_version\":"
              "\"13\"}\n"
              "{\"type\":\"frame\",\"v\":1,\"id\":1,\"pc\":\"0x401000\",\"module\":\"/app/train\","
              "\"offset\":\"0x1000\",\"function\":\"train_step()\",\"file\":\"/src/"
              "train.cu\",\"line\":90,"
              "\"source\":\"cudaStreamSynchronize(s);\"}\n"
              "{\"type\":\"stack\",\"v\":1,\"id\":1,\"frames\":[1]}\n"
              "{\"type\":\"kernel_config\",\"v\":1,\"ts_ns\":990000,\"id\":1,\"name\":1,"
              "\"block_threads\":256,\"dynamic_smem_bytes\":0,\"device\":0,\"registers\":64,"
              "\"static_smem_bytes\":0,\"local_bytes_per_thread\":0,\"max_threads_per_block\":1024,"
              "\"blocks_per_sm\":4,\"active_warps\":32,\"max_warps\":64,\"occupancy\":0.5,"
              "\"limit_warps\":8,\"limit_registers\":4,\"limit_smem\":32,\"limit_blocks\":32,"
              "\"limiter\":\"registers\",\"breakdown_agrees\":true}\n"
              "{\"type\":\"kernel\",\"v\":1,\"start_ns\":[1000000,1500000,2000000],"
              "\"end_ns\":[1300000,1600500,2100000],\"device\":[0,0,0],\"context\":[1,1,1],"
              "\"stream\":[7,13,7],\"correlation\":[11,12,13],\"name\":[1,3,3],\"grid_x\":[128,64,"
              "1],"
              "\"grid_y\":[2,1,1],\"grid_z\":[1,1,1],\"block_x\":[256,128,32],\"block_y\":[1,1,1],"
              "\"block_z\":[1,1,1],\"registers\":[64,32,16],\"static_smem_bytes\":[1024,0,0],"
              "\"dynamic_smem_bytes\":[2048,0,0],\"local_bytes_per_thread\":[0,0,0],"
              "\"graph_id\":[0,0,0],\"graph_node\":[0,0,0],\"demangled\":[2,4,4],\"scope\":[2,null,"
              "null],"
              "\"config\":[1,null,null],\"external_kind\":[null,null,null],"
              "\"external_id\":[null,null,null],\"launch_ns\":[990000,1490000,null],"
              "\"tid\":[100,101,null],\"stack\":[1,null,null]}\n"
              "{\"type\":\"copy\",\"v\":1,\"start_ns\":[500000],\"end_ns\":[600000],\"device\":[0],"
              "\"stream\":[7],\"correlation\":[10],\"bytes\":[1048576],\"copy_kind\":[1],\"src_"
              "kind\":[2],"
              "\"dst_kind\":[3],\"async\":[1],\"scope\":[1]}\n"
              "{\"type\":\"sync\",\"v\":1,\"start_ns\":[1310000,2050000],\"end_ns\":[1650000,"
              "2200000],"
              "\"sync_type\":[3,4],\"tid\":[100,101],\"context\":[1,1],\"stream\":[7,null],"
              "\"event\":[null,null],\"correlation\":[14,15],\"scope\":[2,3],\"stack\":[1,null]}\n"
              "{\"type\":\"gpu_sample\",\"v\":1,\"ts_ns\":[1000000,2000000],\"device\":[0,0],"
              "\"gpu_util_pct\":[50,100],\"mem_util_pct\":[10,20],"
              "\"mem_used_bytes\":[1073741824,2147483648],\"mem_free_bytes\":[1,1],"
              "\"mem_total_bytes\":[85520809984,85520809984],\"temp_gpu_c\":[60,61],"
              "\"temp_mem_c\":[null,null],\"power_mw\":[250500,300000],"
              "\"power_limit_mw\":[700000,700000],\"energy_mj\":[null,null],"
              "\"clock_sm_mhz\":[1980,1980],\"clock_gfx_mhz\":[1980,1980],\"clock_mem_mhz\":[2619,"
              "2619],"
              "\"fan_pct\":[null,null],\"sm_active_pct\":[42.5,null]}\n"
              "{\"type\":\"session_end\",\"v\":1,\"ts_ns\":3000000,\"duration_ns\":3000000,"
              "\"records_written\":0,\"records_dropped\":0,\"bytes_written\":0,\"write_errors\":0}"
              "\n";

static const char scope_log[] =
    HEADER("scope") "{\"type\":\"dict\",\"v\":1,\"id\":[10,11,12,13,14,15],\"str\":[\"train\","
                    "\"step\",\"io\","
                    "\"train\",\"train/step\",\"io\"]}\n"
                    "{\"type\":\"scope_begin\",\"v\":1,\"ts_ns\":[900000,950000,1400000],\"tid\":["
                    "100,100,101],"
                    "\"id\":[1,2,3],\"parent\":[0,1,0],\"depth\":[1,2,1],\"name\":[10,11,12],"
                    "\"tag\":[0,0,0],"
                    "\"path\":[13,14,15],\"repeat\":[0,0,0],\"warmup\":[0,0,0]}\n"
                    "{\"type\":\"scope_end\",\"v\":1,\"ts_ns\":[1700000,2300000,2500000],\"tid\":["
                    "100,101,100],"
                    "\"id\":[2,3,1],\"implicit\":[0,0,0]}\n";

static const char system_log[] = HEADER(
    "system") "{\"type\":\"host_sample\",\"v\":1,\"ts_ns\":[1000000,2000000],\"cpu_pct\":[12.5,"
              "null],"
              "\"proc_cpu_pct\":[99.0,101.5],\"mem_used_bytes\":[1,1],\"mem_total_bytes\":[2,2],"
              "\"proc_rss_bytes\":[2147483648,2147487744],\"cg_mem_used_bytes\":[null,null],"
              "\"cg_mem_limit_bytes\":[null,null],\"cg_cpu_pct\":[null,null],"
              "\"cg_cpu_limit_cores\":[null,null]}\n";

/* Slices: 3 scopes, 2 syncs, 3 kernels, 2 launches, 1 copy. Counters: GPU
 * util, memory, power, clock, temperature 2 each, SM active 1; host CPU 1,
 * process CPU 2, RSS 2. */
#define N_SLICES   11
#define N_COUNTERS 16

static char session_dir[1024];
static char out_dir[1024];
static gpufl__model_t *model;

static void write_file(const char *dir, const char *name, const char *text) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
}

static int setup(void **state) {
    (void)state;
    snprintf(session_dir, sizeof session_dir, "%s", tu_scratch_dir("export", "session"));
    snprintf(out_dir, sizeof out_dir, "%s", tu_scratch_dir("export", "out"));
    write_file(session_dir, "device.log", device_log);
    write_file(session_dir, "scope.log", scope_log);
    write_file(session_dir, "system.log", system_log);
    if (gpufl__model_load(&model, session_dir) != 0) return -1;
    return model->n_kernels == 3 && model->n_syncs == 2 && model->n_scopes == 3 ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    gpufl__model_destroy(model);
    return 0;
}

static gpufl_export_options_t options(gpufl_export_format_t format, const char *path) {
    gpufl_export_options_t o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.format = format;
    o.path = path;
    return o;
}

/* ---------------------------------------------------------------------- */
/* Chrome JSON                                                              */
/* ---------------------------------------------------------------------- */

static json_t *load_json(const char *path) {
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    if (!j) fail_msg("%s: line %d: %s", path, err.line, err.text);
    return j;
}

static const char *str_of(json_t *o, const char *key) {
    return json_string_value(json_object_get(o, key));
}

/* The first event with ph and name (and, when given, cat), or NULL. */
static json_t *find_event(json_t *events, const char *ph, const char *name, size_t nth) {
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e) {
        if (strcmp(str_of(e, "ph"), ph) == 0 && (!name || strcmp(str_of(e, "name"), name) == 0))
            if (nth-- == 0) return e;
    }
    return NULL;
}

/* The Chrome tid of the track named `name` (from its thread_name event). */
static json_int_t tid_of(json_t *events, const char *name) {
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e) {
        if (strcmp(str_of(e, "ph"), "M") == 0 && strcmp(str_of(e, "name"), "thread_name") == 0 &&
            strcmp(str_of(json_object_get(e, "args"), "name"), name) == 0)
            return json_integer_value(json_object_get(e, "tid"));
    }
    fail_msg("no track named %s", name);
    return -1;
}

static double num(json_t *o, const char *key) { return json_number_value(json_object_get(o, key)); }

static size_t count_ph(json_t *events, const char *ph) {
    size_t i, n = 0;
    json_t *e;
    json_array_foreach(events, i, e) n += strcmp(str_of(e, "ph"), ph) == 0;
    return n;
}

static void test_chrome_content(void **state) {
    (void)state;
    char path[1200];
    snprintf(path, sizeof path, "%s/one.trace.json", out_dir);
    gpufl_export_options_t o = options(GPUFL_EXPORT_CHROME, path);
    gpufl_export_result_t res;
    assert_int_equal(gpufl__export_write(&res, model, &o), 0);
    assert_int_equal(res.n_files, 1);
    assert_string_equal(res.files[0], path);
    assert_int_equal(res.slices, N_SLICES);
    assert_int_equal(res.counters, N_COUNTERS);
    assert_int_equal(res.flows, 2);
    assert_int_equal(res.no_launch, 1);
    assert_int_equal(res.clipped, 0);

    json_t *root = load_json(path);
    assert_string_equal(str_of(root, "displayTimeUnit"), "ns");
    json_t *ev = json_object_get(root, "traceEvents");
    assert_true(json_is_array(ev));
    assert_int_equal(count_ph(ev, "X"), N_SLICES);
    assert_int_equal(count_ph(ev, "C"), N_COUNTERS);
    assert_int_equal(count_ph(ev, "s"), 2);
    assert_int_equal(count_ph(ev, "f"), 2);
    assert_int_equal(res.events, json_array_size(ev));

    /* Metadata: the process, its threads and GPU tracks, their order. */
    json_t *p = find_event(ev, "M", "process_name", 0);
    assert_non_null(p);
    assert_int_equal(json_integer_value(json_object_get(p, "pid")), 4242);
    assert_string_equal(str_of(json_object_get(p, "args"), "name"), "exp_app");
    assert_int_equal(tid_of(ev, "thread 100"), 100);
    assert_int_equal(tid_of(ev, "thread 101"), 101);
    json_int_t s7 = tid_of(ev, "GPU 0 stream 7"), s13 = tid_of(ev, "GPU 0 stream 13");
    json_int_t copies = tid_of(ev, "GPU 0 copies and memsets");
    assert_true(s7 != s13 && s7 != copies && s7 > 4194304);
    assert_non_null(find_event(ev, "M", "thread_sort_index", 0));

    /* The kernel with the odd name: exact times, its arguments. */
    json_t *k = find_event(ev, "X", ODD_NAME, 0);
    assert_non_null(k);
    assert_string_equal(str_of(k, "cat"), "kernel");
    assert_int_equal(json_integer_value(json_object_get(k, "tid")), s7);
    assert_true(num(k, "ts") == 1000.0 && num(k, "dur") == 300.0);
    json_t *a = json_object_get(k, "args");
    assert_string_equal(str_of(a, "grid"), "128x2x1");
    assert_string_equal(str_of(a, "block"), "256x1x1");
    assert_int_equal(json_integer_value(json_object_get(a, "registers_per_thread")), 64);
    assert_int_equal(json_integer_value(json_object_get(a, "static_smem_bytes")), 1024);
    assert_int_equal(json_integer_value(json_object_get(a, "dynamic_smem_bytes")), 2048);
    assert_true(num(a, "occupancy_pct") == 50.0);
    assert_string_equal(str_of(a, "limiter"), "registers");
    assert_int_equal(json_integer_value(json_object_get(a, "correlation")), 11);
    assert_string_equal(str_of(a, "scope"), "train/step");
    assert_string_equal(str_of(a, "site"), "/src/train.cu:90 in train_step()");
    /* ns precision: 1500000 .. 1600500 ns is 1500.000 us for 100.500 us. */
    json_t *k1 = find_event(ev, "X", "step()", 0);
    assert_int_equal(json_integer_value(json_object_get(k1, "tid")), s13);
    assert_true(num(k1, "ts") == 1500.0 && num(k1, "dur") == 100.5);
    assert_null(json_object_get(json_object_get(k1, "args"), "limiter"));

    /* Scopes nest on their thread; syncs carry the call site. */
    json_t *sc = find_event(ev, "X", "step", 0);
    assert_int_equal(json_integer_value(json_object_get(sc, "tid")), 100);
    assert_true(num(sc, "ts") == 950.0 && num(sc, "dur") == 750.0);
    assert_string_equal(str_of(json_object_get(sc, "args"), "path"), "train/step");
    json_t *sy = find_event(ev, "X", "cudaStreamSynchronize", 0);
    assert_int_equal(json_integer_value(json_object_get(sy, "tid")), 100);
    assert_true(num(sy, "ts") == 1310.0 && num(sy, "dur") == 340.0);
    assert_string_equal(str_of(json_object_get(sy, "args"), "site"),
                        "/src/train.cu:90 in train_step()");
    json_t *sy2 = find_event(ev, "X", "cudaDeviceSynchronize", 0);
    assert_int_equal(json_integer_value(json_object_get(sy2, "tid")), 101);
    assert_null(json_object_get(json_object_get(sy2, "args"), "site"));
    json_t *cp = find_event(ev, "X", "Memcpy HtoD", 0);
    assert_int_equal(json_integer_value(json_object_get(cp, "tid")), copies);
    assert_string_equal(str_of(json_object_get(cp, "args"), "src"), "pinned");

    /* Launches: a short slice on the launching thread, one arrow per kernel. */
    json_t *l0 = find_event(ev, "X", "launch", 0), *l1 = find_event(ev, "X", "launch", 1);
    assert_non_null(l1);
    assert_null(find_event(ev, "X", "launch", 2));
    assert_int_equal(json_integer_value(json_object_get(l0, "tid")), 100);
    assert_true(num(l0, "ts") == 990.0 && num(l0, "dur") == 1.0);
    assert_int_equal(json_integer_value(json_object_get(l1, "tid")), 101);
    for (size_t i = 0; i < 2; i++) {
        json_t *s = find_event(ev, "s", NULL, i), *f = NULL;
        json_int_t id = json_integer_value(json_object_get(s, "id"));
        for (size_t j = 0; (f = find_event(ev, "f", NULL, j)); j++)
            if (json_integer_value(json_object_get(f, "id")) == id) break;
        assert_non_null(f);
        assert_string_equal(str_of(f, "bp"), "e");
        if (id == 1) { /* kernel 0: launched at 990 us on thread 100, ran at 1000 us */
            assert_true(num(s, "ts") == 990.0 && num(f, "ts") == 1000.0);
            assert_int_equal(json_integer_value(json_object_get(s, "tid")), 100);
            assert_int_equal(json_integer_value(json_object_get(f, "tid")), s7);
        } else {
            assert_int_equal(id, 2);
            assert_true(num(s, "ts") == 1490.0 && num(f, "ts") == 1500.0);
            assert_int_equal(json_integer_value(json_object_get(f, "tid")), s13);
        }
    }

    /* Counters. */
    json_t *c = find_event(ev, "C", "GPU 0 power (W)", 0);
    assert_true(num(c, "ts") == 1000.0 && num(json_object_get(c, "args"), "value") == 250.5);
    c = find_event(ev, "C", "GPU 0 utilization (%)", 1);
    assert_true(num(c, "ts") == 2000.0 && num(json_object_get(c, "args"), "value") == 100);
    c = find_event(ev, "C", "GPU 0 memory used (bytes)", 0);
    assert_true(num(json_object_get(c, "args"), "value") == 1073741824.0);
    assert_non_null(find_event(ev, "C", "GPU 0 SM clock (MHz)", 1));
    assert_non_null(find_event(ev, "C", "GPU 0 temperature (C)", 1));
    assert_non_null(find_event(ev, "C", "GPU 0 SM active (%)", 0));
    assert_null(find_event(ev, "C", "GPU 0 SM active (%)", 1)); /* null is not drawn */
    assert_null(find_event(ev, "C", "host CPU (%)", 1));
    c = find_event(ev, "C", "process RSS (bytes)", 1);
    assert_true(num(json_object_get(c, "args"), "value") == 2147487744.0);
    json_decref(root);
    gpufl_export_result_fini(&res);
}

static void test_chrome_split(void **state) {
    (void)state;
    char path[1200];
    snprintf(path, sizeof path, "%s/split.trace.json", out_dir);
    gpufl_export_options_t o = options(GPUFL_EXPORT_CHROME, path);
    o.max_events_per_file = 3;
    gpufl_export_result_t res;
    assert_int_equal(gpufl__export_write(&res, model, &o), 0);
    assert_true(res.n_files >= 10); /* file numbers of two digits */
    size_t x = 0, cnt = 0, flow_s = 0, flow_f = 0;
    for (size_t i = 0; i < res.n_files; i++) {
        char want[1300];
        snprintf(want, sizeof want, "%s/split.%02zu.trace.json", out_dir, i + 1);
        assert_string_equal(res.files[i], want);
        json_t *root = load_json(res.files[i]);
        json_t *ev = json_object_get(root, "traceEvents");
        size_t n = json_array_size(ev) - count_ph(ev, "M");
        assert_true(n >= 1 && n <= 3);
        assert_non_null(find_event(ev, "M", "process_name", 0)); /* each opens alone */
        assert_int_equal(tid_of(ev, "GPU 0 stream 7"), tid_of(ev, "GPU 0 stream 7"));
        assert_int_equal(
            json_integer_value(json_object_get(json_object_get(root, "otherData"), "part")),
            (json_int_t)i + 1);
        x += count_ph(ev, "X");
        cnt += count_ph(ev, "C");
        flow_s += count_ph(ev, "s");
        flow_f += count_ph(ev, "f");
        json_decref(root);
    }
    assert_int_equal(x, N_SLICES);
    assert_int_equal(cnt, N_COUNTERS);
    assert_int_equal(flow_s, flow_f);
    assert_int_equal(flow_s, res.flows);
    assert_int_equal(res.flows + res.flows_cut, 2);

    /* To a stream: never split, but said. */
    FILE *f = tmpfile();
    assert_non_null(f);
    o.path = "-";
    o.out = f;
    gpufl_export_result_t r2;
    assert_int_equal(gpufl__export_write(&r2, model, &o), 0);
    assert_int_equal(r2.n_files, 0);
    assert_true(r2.split_suppressed);
    assert_int_equal(r2.flows, 2);
    fclose(f);
    gpufl_export_result_fini(&r2);
    gpufl_export_result_fini(&res);
}

static void test_errors(void **state) {
    (void)state;
    gpufl_export_format_t fmt;
    assert_int_equal(gpufl_export_format_parse("perfetto", &fmt), 0);
    assert_int_equal(fmt, GPUFL_EXPORT_PERFETTO);
    assert_int_equal(gpufl_export_format_parse("chrome", &fmt), 0);
    assert_int_equal(fmt, GPUFL_EXPORT_CHROME);
    assert_int_equal(gpufl_export_format_parse("bogus", &fmt), GPUFL_EINVAL);
    gpufl_export_options_t o = options(GPUFL_EXPORT_CHROME, "");
    assert_int_equal(gpufl__export_write(NULL, model, &o), GPUFL_EINVAL);
    o.size = 4;
    assert_int_equal(gpufl__export_write(NULL, model, &o), GPUFL_EINVAL);
    char path[1200];
    snprintf(path, sizeof path, "%s/no/such/dir/x.json", out_dir);
    for (int fmt_i = 0; fmt_i < 2; fmt_i++) {
        o = options((gpufl_export_format_t)fmt_i, path);
        gpufl_export_result_t res;
        assert_int_equal(gpufl__export_write(&res, model, &o), GPUFL_EIO);
        assert_non_null(strstr(gpufl_last_error(), "no/such/dir/x.json"));
        gpufl_export_result_fini(&res);
    }
}

/* ---------------------------------------------------------------------- */
/* CTF                                                                      */
/* ---------------------------------------------------------------------- */

static uint64_t le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* The whole file (NUL added), its size in *n. */
static unsigned char *slurp(const char *dir, const char *name, size_t *n) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    unsigned char *buf = malloc(1 << 20);
    assert_non_null(buf);
    *n = fread(buf, 1, (1 << 20) - 1, f);
    buf[*n] = '\0';
    fclose(f);
    return buf;
}

/* The trace UUID of the metadata as 16 bytes. */
static void metadata_uuid(const char *metadata, unsigned char out[16]) {
    const char *p = strstr(metadata, "uuid = \"");
    assert_non_null(p);
    p += 8;
    for (int i = 0; i < 16; i++) {
        if (*p == '-') p++;
        unsigned v;
        assert_int_equal(sscanf(p, "%2x", &v), 1);
        out[i] = (unsigned char)v;
        p += 2;
    }
}

/* One data stream file of one packet: header (magic, UUID, stream class),
 * context (first and last time, content and packet sizes in bits). */
static void check_packet(const char *dir, const char *name, const unsigned char uuid[16],
                         unsigned stream_class, uint64_t first_ns, uint64_t last_ns) {
    size_t n;
    unsigned char *b = slurp(dir, name, &n);
    assert_true(n > 64);
    assert_memory_equal(b, "\xC1\x1F\xFC\xC1", 4);
    assert_memory_equal(b + 4, uuid, 16);
    assert_int_equal(b[20] | b[21] << 8 | b[22] << 16 | (unsigned)b[23] << 24, stream_class);
    assert_int_equal(le64(b + 24), first_ns);
    assert_int_equal(le64(b + 32), last_ns);
    assert_int_equal(le64(b + 40), (uint64_t)n * 8);
    assert_int_equal(le64(b + 48), (uint64_t)n * 8);
    assert_int_equal(le64(b + 56), 0); /* packet_seq_num */
    free(b);
}

static void test_ctf(void **state) {
    (void)state;
    gpufl_export_format_t fmt;
    assert_int_equal(gpufl_export_format_parse("ctf", &fmt), 0);
    assert_int_equal(fmt, GPUFL_EXPORT_CTF);
    assert_string_equal(gpufl_export_extension(GPUFL_EXPORT_CTF), ".ctf");
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/trace.ctf", out_dir);
    gpufl_export_options_t o = options(GPUFL_EXPORT_CTF, dir);
    gpufl_export_result_t res;
    assert_int_equal(gpufl__export_write(&res, model, &o), 0);
    assert_int_equal(res.n_files, 1);
    assert_string_equal(res.files[0], dir);
    /* 3 scopes begin and end, 2 syncs, 3 kernels, 1 copy; 2 GPU and 2 host samples. */
    assert_int_equal(res.events, 16);
    assert_int_equal(res.slices, 12);
    assert_int_equal(res.counters, 4);
    assert_int_equal(res.tracks, 7);
    gpufl_export_result_fini(&res);

    size_t n;
    char *meta = (char *)slurp(dir, "metadata", &n);
    assert_true(strncmp(meta, "/* CTF 1.8 */\n", 14) == 0);
    assert_non_null(strstr(meta, "offset_s = 1795305600;"));
    assert_non_null(strstr(meta, "absolute = true;"));
    assert_non_null(strstr(meta, "\"device_to_host\" = 2,"));
    unsigned char uuid[16];
    metadata_uuid(meta, uuid);
    assert_int_equal(uuid[6] >> 4, 8); /* a version 8 UUID */
    free(meta);
    check_packet(dir, "thread-100", uuid, 0, 900000, 2500000);
    check_packet(dir, "thread-101", uuid, 0, 1400000, 2300000);
    check_packet(dir, "gpu0-stream7", uuid, 1, 1000000, 2000000);
    check_packet(dir, "gpu0-stream13", uuid, 1, 1500000, 1500000);
    check_packet(dir, "gpu0-copies", uuid, 1, 500000, 500000);
    check_packet(dir, "gpu0-samples", uuid, 2, 1000000, 2000000);
    check_packet(dir, "host-samples", uuid, 2, 1000000, 2000000);
    /* Strings go as they are, NUL-terminated: the odd name and its mangled one. */
    unsigned char *k = slurp(dir, "gpu0-stream7", &n);
    assert_non_null(memmem(k, n, ODD_NAME "\0_Z5trainv\0", sizeof ODD_NAME + 10));
    free(k);

    /* Into the trace again: refused without overwrite (also for callers whose
     * options end before it), replaced with it. */
    assert_int_equal(gpufl__export_write(NULL, model, &o), GPUFL_EINVAL);
    assert_non_null(strstr(gpufl_last_error(), "is not empty"));
    o.overwrite = 1;
    o.size = offsetof(gpufl_export_options_t, overwrite);
    assert_int_equal(gpufl__export_write(NULL, model, &o), GPUFL_EINVAL);
    o.size = sizeof o;
    assert_int_equal(gpufl__export_write(NULL, model, &o), 0);
    /* A stream, or a file where the directory should be: errors that say so. */
    o = options(GPUFL_EXPORT_CTF, NULL);
    o.out = stdout;
    assert_int_equal(gpufl__export_write(NULL, model, &o), GPUFL_EINVAL);
    assert_non_null(strstr(gpufl_last_error(), "directory"));
    char file[1300];
    snprintf(file, sizeof file, "%s/metadata", dir);
    o = options(GPUFL_EXPORT_CTF, file);
    assert_int_equal(gpufl__export_write(NULL, model, &o), GPUFL_EIO);
    assert_non_null(strstr(gpufl_last_error(), "not a directory"));
}

/* ---------------------------------------------------------------------- */
/* Perfetto: a minimal protobuf reader                                      */
/* ---------------------------------------------------------------------- */

typedef struct pbr {
    const uint8_t *p, *end;
} pbr_t;

typedef struct pbf {
    uint32_t field;
    int wire;
    uint64_t v; /* varint and fixed64 */
    pbr_t sub;  /* length-delimited */
} pbf_t;

static uint64_t rd_varint(pbr_t *r) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end) fail_msg("varint runs past the end");
        uint8_t b = *r->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
    }
    fail_msg("varint longer than 10 bytes");
    return 0;
}

/* The next field, 0 at the end. */
static int rd_field(pbr_t *r, pbf_t *f) {
    if (r->p >= r->end) return 0;
    uint64_t tag = rd_varint(r);
    f->field = (uint32_t)(tag >> 3);
    f->wire = (int)(tag & 7);
    assert_true(f->field > 0);
    switch (f->wire) {
    case 0: f->v = rd_varint(r); break;
    case 1:
        assert_true(r->end - r->p >= 8);
        f->v = 0;
        for (int i = 0; i < 8; i++) f->v |= (uint64_t)r->p[i] << (8 * i);
        r->p += 8;
        break;
    case 2: {
        uint64_t n = rd_varint(r);
        assert_true(n <= (uint64_t)(r->end - r->p));
        f->sub = (pbr_t){r->p, r->p + n};
        r->p += n;
        break;
    }
    default: fail_msg("unexpected wire type %d", f->wire);
    }
    return 1;
}

static char *pb_str(const pbf_t *f) {
    size_t n = (size_t)(f->sub.end - f->sub.p);
    char *s = malloc(n + 1);
    memcpy(s, f->sub.p, n);
    s[n] = '\0';
    return s;
}

static void test_pb_encoder(void **state) {
    (void)state;
    gpufl__pb_t pb;
    gpufl__pb_init(&pb, 1 << 20);
    char big[300];
    memset(big, 'x', sizeof big);
    big[sizeof big - 1] = '\0';
    gpufl__pb_begin(&pb, 1);
    gpufl__pb_varint(&pb, 2, 300);
    gpufl__pb_begin(&pb, 3); /* a nested message of more than 127 bytes */
    gpufl__pb_string(&pb, 4, big, 1000);
    gpufl__pb_end(&pb);
    gpufl__pb_varint(&pb, 5, (uint64_t)(int64_t)-1);
    gpufl__pb_fixed64(&pb, 47, 0x0102030405060708ull);
    gpufl__pb_double(&pb, 44, 2.5);
    gpufl__pb_string(&pb, 6, "h\xC3\xA9llo", 2); /* cut before the 2-byte character */
    gpufl__pb_end(&pb);
    assert_int_equal(pb.depth, 0);
    assert_false(pb.error || pb.buf.overflow);
    /* 300 = 0xAC 0x02 */
    const uint8_t *d = (const uint8_t *)pb.buf.data;
    assert_int_equal(d[0], 0x0A);
    assert_int_equal(d[3], 0x10);
    assert_int_equal(d[4], 0xAC);
    assert_int_equal(d[5], 0x02);

    pbr_t r = {d, d + pb.buf.len}, in;
    pbf_t f;
    assert_true(rd_field(&r, &f) && f.field == 1 && f.wire == 2);
    assert_true(r.p == r.end);
    in = f.sub;
    assert_true(rd_field(&in, &f) && f.field == 2 && f.v == 300);
    assert_true(rd_field(&in, &f) && f.field == 3 && f.wire == 2);
    pbr_t nested = f.sub;
    pbf_t g;
    assert_true(rd_field(&nested, &g) && g.field == 4);
    assert_int_equal(g.sub.end - g.sub.p, 299);
    assert_true(rd_field(&in, &f) && f.field == 5 && f.v == UINT64_MAX);
    assert_true(rd_field(&in, &f) && f.field == 47 && f.wire == 1 && f.v == 0x0102030405060708ull);
    assert_true(rd_field(&in, &f) && f.field == 44 && f.wire == 1);
    double dv;
    memcpy(&dv, &f.v, sizeof dv);
    assert_true(dv == 2.5);
    assert_true(rd_field(&in, &f) && f.field == 6);
    char *s = pb_str(&f);
    assert_string_equal(s, "h");
    free(s);
    assert_false(rd_field(&in, &f));
    assert_int_equal(gpufl__pb_varint_size(127), 1);
    assert_int_equal(gpufl__pb_varint_size(128), 2);
    assert_int_equal(gpufl__pb_varint_size(UINT64_MAX), 10);
    gpufl__pb_fini(&pb);
}

/* What the checks need of a decoded trace. */
#define MAX_TRACKS 64
#define MAX_NAMES  64

typedef struct track_info {
    uint64_t uuid, parent;
    int64_t pid, tid;
    char *name;
    int is_counter, is_process, is_thread;
    int open; /* slices begun, not ended */
} track_info_t;

typedef struct trace_info {
    size_t packets;
    track_info_t tracks[MAX_TRACKS];
    size_t n_tracks;
    char *names[MAX_NAMES]; /* by iid */
    char *keys[MAX_NAMES];
    size_t begins, ends, counters;
    size_t instants;        /* TYPE_INSTANT events */
    size_t instants_thread; /* of them, on a thread track named "thread 100" */
    uint64_t flow_out[8], flow_in[8];
    size_t n_flow_out, n_flow_in;
    uint64_t last_ts;
    int odd_name_begun;       /* a BEGIN named k<"a">\b on GPU 0 stream 7 */
    uint64_t odd_name_ts;     /* its time */
    int odd_name_site;        /* with the site argument */
    double power_first;       /* the first power value */
    int64_t util_last;        /* the last utilization value */
    uint64_t kernel0_in_uuid; /* track of the arrow to kernel 0 */
} trace_info_t;

static track_info_t *track_by_uuid(trace_info_t *t, uint64_t uuid) {
    for (size_t i = 0; i < t->n_tracks; i++)
        if (t->tracks[i].uuid == uuid) return &t->tracks[i];
    return NULL;
}

static void read_descriptor(trace_info_t *t, pbr_t r) {
    assert_true(t->n_tracks < MAX_TRACKS);
    track_info_t *tr = &t->tracks[t->n_tracks++];
    memset(tr, 0, sizeof *tr);
    pbf_t f, g;
    while (rd_field(&r, &f)) {
        if (f.field == 1) tr->uuid = f.v;
        if (f.field == 5) tr->parent = f.v;
        if (f.field == 2) tr->name = pb_str(&f);
        if (f.field == 8) tr->is_counter = 1;
        if (f.field == 3 || f.field == 4) {
            tr->is_process = f.field == 3;
            tr->is_thread = f.field == 4;
            pbr_t s = f.sub;
            while (rd_field(&s, &g)) {
                if (g.field == 1) tr->pid = (int64_t)g.v;
                if (f.field == 4 && g.field == 2) tr->tid = (int64_t)g.v;
                if ((f.field == 3 && g.field == 6) || (f.field == 4 && g.field == 5))
                    tr->name = pb_str(&g);
            }
        }
    }
    assert_true(tr->uuid > 0);
    assert_null(track_by_uuid(t, tr->uuid) != tr ? tr : NULL); /* unique */
}

static void read_interned(trace_info_t *t, pbr_t r) {
    pbf_t f, g;
    while (rd_field(&r, &f)) {
        assert_true(f.field == 2 || f.field == 3);
        char **table = f.field == 2 ? t->names : t->keys;
        uint64_t iid = 0;
        char *name = NULL;
        pbr_t s = f.sub;
        while (rd_field(&s, &g)) {
            if (g.field == 1) iid = g.v;
            if (g.field == 2) name = pb_str(&g);
        }
        assert_true(iid > 0 && iid < MAX_NAMES && name);
        assert_null(table[iid]); /* defined once */
        table[iid] = name;
    }
}

static void read_event(trace_info_t *t, pbr_t r, uint64_t ts, int flags) {
    pbf_t f, g;
    uint64_t type = 0, uuid = 0, name_iid = 0;
    int site = 0;
    int64_t ival = -1;
    double dval = -1;
    assert_true(flags & 2); /* SEQ_NEEDS_INCREMENTAL_STATE */
    while (rd_field(&r, &f)) {
        switch (f.field) {
        case 9: type = f.v; break;
        case 11: uuid = f.v; break;
        case 10: name_iid = f.v; break;
        case 30: ival = (int64_t)f.v; break;
        case 44: memcpy(&dval, &f.v, sizeof dval); break;
        case 47:
            assert_int_equal(f.wire, 1);
            t->flow_out[t->n_flow_out++] = f.v;
            break;
        case 48:
            assert_int_equal(f.wire, 1);
            t->flow_in[t->n_flow_in++] = f.v;
            if (f.v == 1) t->kernel0_in_uuid = uuid;
            break;
        case 4: {
            pbr_t s = f.sub;
            uint64_t key = 0;
            while (rd_field(&s, &g)) {
                if (g.field == 1) key = g.v;
                if (g.field == 6 && key && t->keys[key] && strcmp(t->keys[key], "site") == 0) {
                    char *v = pb_str(&g);
                    site = strcmp(v, "/src/train.cu:90 in train_step()") == 0;
                    free(v);
                }
            }
            assert_true(key > 0 && key < MAX_NAMES && t->keys[key]); /* interned first */
            break;
        }
        default: break;
        }
    }
    track_info_t *tr = track_by_uuid(t, uuid);
    assert_non_null(tr);
    if (type == 1) {
        assert_true(name_iid > 0 && name_iid < MAX_NAMES && t->names[name_iid]);
        assert_false(tr->is_counter);
        tr->open++;
        t->begins++;
        if (strcmp(t->names[name_iid], ODD_NAME) == 0) {
            assert_string_equal(tr->name, "GPU 0 stream 7");
            t->odd_name_begun = 1;
            t->odd_name_ts = ts;
            t->odd_name_site = site;
        }
    } else if (type == 3) {
        assert_true(name_iid > 0 && name_iid < MAX_NAMES && t->names[name_iid]);
        t->instants++;
        t->instants_thread += tr->is_thread && tr->tid == 100;
    } else if (type == 2) {
        assert_true(tr->open > 0); /* an end only after its begin */
        tr->open--;
        t->ends++;
    } else {
        assert_int_equal(type, 4);
        assert_true(tr->is_counter);
        t->counters++;
        if (strcmp(tr->name, "GPU 0 power (W)") == 0 && t->power_first < 0) t->power_first = dval;
        if (strcmp(tr->name, "GPU 0 utilization (%)") == 0) t->util_last = ival;
    }
}

static void read_trace(const char *path, trace_info_t *t) {
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    static uint8_t data[1 << 20];
    size_t n = fread(data, 1, sizeof data, fp);
    fclose(fp);
    assert_true(n > 0 && n < sizeof data);
    memset(t, 0, sizeof *t);
    t->power_first = -1;
    pbr_t r = {data, data + n};
    pbf_t f, g;
    while (rd_field(&r, &f)) {
        assert_int_equal(f.field, 1); /* Trace.packet */
        t->packets++;
        uint64_t ts = 0, seq = 0, flags = 0;
        int has_ts = 0;
        pbr_t event = {0}, interned = {0}, s = f.sub;
        while (rd_field(&s, &g)) {
            switch (g.field) {
            case 8: ts = g.v, has_ts = 1; break;
            case 10: seq = g.v; break;
            case 13: flags = g.v; break;
            case 60: read_descriptor(t, g.sub); break;
            case 11: event = g.sub; break;
            case 12: interned = g.sub; break;
            default: fail_msg("unexpected packet field %u", g.field);
            }
        }
        assert_int_equal(seq, 1);
        if (t->packets == 1) assert_int_equal(flags, 1); /* SEQ_INCREMENTAL_STATE_CLEARED */
        if (interned.p) read_interned(t, interned);
        if (event.p) {
            assert_true(has_ts && ts >= t->last_ts); /* in time order */
            t->last_ts = ts;
            read_event(t, event, ts, (int)flags);
        }
    }
}

static void test_perfetto_content(void **state) {
    (void)state;
    char path[1200];
    snprintf(path, sizeof path, "%s/one.perfetto-trace", out_dir);
    gpufl_export_options_t o = options(GPUFL_EXPORT_PERFETTO, path);
    gpufl_export_result_t res;
    assert_int_equal(gpufl__export_write(&res, model, &o), 0);
    assert_int_equal(res.n_files, 1);
    assert_int_equal(res.flows, 2);
    trace_info_t t;
    read_trace(path, &t);
    /* Packets: the process, each track, begin and end of every slice, counters. */
    assert_int_equal(t.packets, 1 + res.tracks + 2 * N_SLICES + N_COUNTERS);
    assert_int_equal(res.events, t.packets);
    assert_int_equal(t.n_tracks, 1 + res.tracks);
    assert_int_equal(t.begins, N_SLICES);
    assert_int_equal(t.ends, N_SLICES);
    assert_int_equal(t.counters, N_COUNTERS);

    /* Tracks: one process; threads and GPU and counter tracks under it. */
    track_info_t *proc = &t.tracks[0];
    assert_true(proc->is_process);
    assert_int_equal(proc->pid, 4242);
    assert_string_equal(proc->name, "exp_app");
    int threads = 0, gpu = 0, counters = 0;
    for (size_t i = 1; i < t.n_tracks; i++) {
        track_info_t *tr = &t.tracks[i];
        assert_int_equal(tr->parent, proc->uuid);
        assert_int_equal(tr->open, 0); /* every slice ended */
        assert_non_null(tr->name);
        if (tr->is_thread) {
            threads++;
            assert_int_equal(tr->pid, 4242);
            assert_true(tr->tid == 100 || tr->tid == 101);
        } else if (tr->is_counter) {
            counters++;
        } else {
            gpu++;
            assert_int_equal(strncmp(tr->name, "GPU 0 ", 6), 0);
        }
    }
    assert_int_equal(threads, 2);
    assert_int_equal(gpu, 3); /* streams 7 and 13, copies */
    assert_int_equal(counters, 9);

    /* Interned names, each defined once (read_interned checks). */
    int found_odd = 0, found_sync = 0;
    for (size_t i = 0; i < MAX_NAMES; i++) {
        if (t.names[i] && strcmp(t.names[i], ODD_NAME) == 0) found_odd++;
        if (t.names[i] && strcmp(t.names[i], "cudaStreamSynchronize") == 0) found_sync++;
    }
    assert_int_equal(found_odd, 1);
    assert_int_equal(found_sync, 1);
    assert_true(t.odd_name_begun && t.odd_name_site);
    assert_int_equal(t.odd_name_ts, 1000000);

    /* Flows: out of both launches, into both kernels. */
    assert_int_equal(t.n_flow_out, 2);
    assert_int_equal(t.n_flow_in, 2);
    assert_true((t.flow_out[0] == 1 && t.flow_out[1] == 2) ||
                (t.flow_out[0] == 2 && t.flow_out[1] == 1));
    assert_true(t.flow_in[0] + t.flow_in[1] == 3 && t.flow_in[0] != t.flow_in[1]);
    assert_string_equal(track_by_uuid(&t, t.kernel0_in_uuid)->name, "GPU 0 stream 7");

    assert_true(t.power_first == 250.5);
    assert_int_equal(t.util_last, 100);
    for (size_t i = 0; i < t.n_tracks; i++) free(t.tracks[i].name);
    for (size_t i = 0; i < MAX_NAMES; i++) free(t.names[i]), free(t.keys[i]);
    gpufl_export_result_fini(&res);
}

/* ---------------------------------------------------------------------- */
/* Launch rows (PcSampling, Deep: no kernel rows)                           */
/* ---------------------------------------------------------------------- */

/* The pcsampled fixture has launch rows and no kernel rows: each launch is
 * an instant on its launching thread's track, named by its kernel. */
static void test_launch_instants(void **state) {
    (void)state;
    char dir[4200], path[1200];
    snprintf(dir, sizeof dir, "%s/fixtures/sessions/pcsampled", GPUFL_TEST_SOURCE_DIR);
    gpufl__model_t *m = NULL;
    assert_int_equal(gpufl__model_load(&m, dir), 0);
    assert_int_equal(m->n_kernels, 0);
    assert_int_equal(m->n_launches, 7);

    snprintf(path, sizeof path, "%s/launches.trace.json", out_dir);
    gpufl_export_options_t o = options(GPUFL_EXPORT_CHROME, path);
    gpufl_export_result_t res;
    assert_int_equal(gpufl__export_write(&res, m, &o), 0);
    assert_int_equal(res.instants, 7);
    assert_int_equal(res.slices, 2); /* the two scopes */
    assert_int_equal(res.flows, 0);
    json_t *doc = load_json(path), *ev = json_object_get(doc, "traceEvents");
    assert_int_equal(count_ph(ev, "i"), 7);
    json_int_t tid = tid_of(ev, "thread 100");
    json_t *e = find_event(ev, "i", "stencil(float*, float const*, int)", 2);
    assert_non_null(e);
    assert_string_equal(str_of(e, "s"), "t");
    assert_string_equal(str_of(e, "cat"), "launch");
    assert_int_equal(json_integer_value(json_object_get(e, "tid")), tid);
    assert_null(json_object_get(e, "dur"));
    assert_true(num(e, "ts") == 480000.0); /* us: 480 ms */
    json_t *args = json_object_get(e, "args");
    assert_int_equal(json_integer_value(json_object_get(args, "correlation")), 5);
    assert_int_equal(json_integer_value(json_object_get(args, "config")), 1);
    assert_string_equal(str_of(args, "scope"), "train");
    assert_non_null(find_event(ev, "i", "gemm(float const*, float const*, float*)", 2));
    json_decref(doc);
    gpufl_export_result_fini(&res);

    snprintf(path, sizeof path, "%s/launches.perfetto-trace", out_dir);
    o = options(GPUFL_EXPORT_PERFETTO, path);
    assert_int_equal(gpufl__export_write(&res, m, &o), 0);
    assert_int_equal(res.instants, 7);
    trace_info_t t;
    read_trace(path, &t);
    assert_int_equal(t.instants, 7);
    assert_int_equal(t.instants_thread, 7);
    assert_int_equal(t.begins, 2);
    assert_int_equal(t.ends, 2);
    for (size_t i = 0; i < t.n_tracks; i++) free(t.tracks[i].name);
    for (size_t i = 0; i < MAX_NAMES; i++) free(t.names[i]), free(t.keys[i]);
    gpufl_export_result_fini(&res);
    gpufl__model_destroy(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chrome_content),
        cmocka_unit_test(test_chrome_split),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_pb_encoder),
        cmocka_unit_test(test_ctf),
        cmocka_unit_test(test_perfetto_content),
        cmocka_unit_test(test_launch_instants),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
