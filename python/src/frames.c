// SPDX-License-Identifier: Apache-2.0
/*
 * frames.c - Python frames in the CPU stacks gpufl captures at kernel
 * launches and synchronizations (enable_stack_trace): the interpreter
 * provider of gpufl_interp.h, registered when the package is imported.
 *
 * walk runs on the application thread inside the CUDA call, and never waits
 * for the GIL: the thread may hold a lock that a thread holding the GIL
 * waits for (PyTorch's caching allocator synchronizes events under its
 * mutex), and at interpreter exit a thread taking the GIL is ended inside
 * the callback. So:
 *   - a thread that holds the GIL (a C extension that keeps it across its
 *     CUDA call) is walked there and then;
 *   - a thread that released it is given the frames recorded at its last
 *     capture point, when one is open: gpufl_py_frames_capture(), called
 *     with the GIL where Python hands work to C that releases it (around
 *     every aten operation under gpufl.torch, around PyTorch's synchronizing
 *     calls);
 *   - otherwise it has no Python frames (trace_stats: stacks_interp_empty).
 * Walks hold the GC off: allocating frame objects could run a collection,
 * and finalizers that call CUDA, inside the callback.
 *
 * A frame's key is (code object's index << 24 | line). The index comes from
 * a table of the code objects met so far, which keeps a reference to each
 * (so that its address is never reused for another) and a copy of its
 * qualified name and file as C strings: describe reads those on gpufl's
 * collector thread without the GIL, so entries are published with a
 * release store of the count and never change afterwards.
 */
#include "gpufl_py.h"

#include <gpufl/gpufl_interp.h>

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define CODES_MAX  65536 /* distinct code objects described; others have no name */
#define KEYS_MAX   64    /* frames recorded at a capture point */
#define LINE_BITS  24
#define LINE_MASK  ((UINT64_C(1) << LINE_BITS) - 1)
#define PREFIX_MAX 16 /* directories of library code */

typedef struct code_info {
    const char *function, *file;
    int library;
} code_info_t;

/* Written under the GIL; infos[0 .. count) read from any thread. */
static code_info_t infos[CODES_MAX];
static _Atomic uint32_t count;
/* Open addressing by code object address, under the GIL: index + 1, 0 empty. */
static PyObject *table_code[2 * CODES_MAX];
static uint32_t table_index[2 * CODES_MAX];

static char *prefixes[PREFIX_MAX]; /* set once, under the GIL, before walking starts */
static size_t n_prefixes;
static _Atomic int walking; /* 0: walk gives nothing (not set up, or the interpreter is ending) */
static PyObject *str_f_back, *str_co_qualname, *str_co_filename;
static _Atomic uint64_t codes_unnamed; /* frames of code met past CODES_MAX */
static _Atomic uint64_t capture_walks; /* walks made at capture points */
/* The calling thread's state when it holds the GIL, else NULL, without the
 * checks of PyThreadState_Get: CPython exports it (3.13 as
 * PyThreadState_GetUnchecked, before as _PyThreadState_UncheckedGet) but the
 * limited API's headers do not declare it; NULL when not found (threads are
 * then never walked live). PyGILState_Check would not do: it answers 1 for
 * every thread once a subinterpreter was ever made. */
static PyThreadState *(*unchecked_tstate)(void);

/* 1 when the calling thread holds the GIL. */
static int gil_held(void) {
    if (unchecked_tstate == NULL) return 0;
    PyThreadState *t = unchecked_tstate();
    return t != NULL && t == PyGILState_GetThisThreadState();
}

/* The frames recorded at this thread's open capture points (depth: how many
 * are open; the outermost recorded them, unless it was told they would not
 * be needed: then `wanted` says whether a CUDA call asked for them). */
static __thread struct {
    uint32_t depth, n;
    int wanted;
    uint64_t keys[KEYS_MAX];
} captured;

/* Library code: a file under one of the prefixes, in any installed
 * packages' directory (a PYTHONPATH or --target install), or frozen in the
 * interpreter ("<frozen importlib._bootstrap>"). */
static int is_library(const char *file) {
    if (strncmp(file, "<frozen ", 8) == 0) return 1;
    if (strstr(file, "/site-packages/") || strstr(file, "/dist-packages/")) return 1;
    for (size_t i = 0; i < n_prefixes; i++) {
        size_t n = strlen(prefixes[i]);
        if (strncmp(file, prefixes[i], n) == 0 && (file[n] == '/' || file[n] == '\0')) return 1;
    }
    return 0;
}

/* A copy of the str attribute `name` of obj, or NULL (no exception left). */
static char *attr_copy(PyObject *obj, PyObject *name) {
    PyObject *v = PyObject_GetAttr(obj, name);
    char *copy = NULL;
    if (v != NULL && PyUnicode_Check(v)) {
        const char *s = PyUnicode_AsUTF8AndSize(v, NULL);
        if (s != NULL) copy = strdup(s);
    }
    Py_XDECREF(v);
    PyErr_Clear();
    return copy;
}

/* The index (from 1) of code, entered when new; 0 when the table is full
 * or its names cannot be read (remembered: not tried again). GIL held. */
static uint32_t code_index(PyObject *code) {
    size_t mask = 2 * CODES_MAX - 1;
    size_t i = ((uintptr_t)code >> 4) * 0x9e3779b97f4a7c15u >> 40 & mask;
    for (; table_code[i] != NULL; i = (i + 1) & mask)
        if (table_code[i] == code) return table_index[i];
    uint32_t n = atomic_load_explicit(&count, memory_order_relaxed);
    if (n >= CODES_MAX) return 0; /* the table (twice CODES_MAX slots) keeps a free slot */
    char *function = attr_copy(code, str_co_qualname);
    char *file = attr_copy(code, str_co_filename);
    uint32_t index = 0;
    if (function != NULL && file != NULL) {
        infos[n] = (code_info_t){function, file, is_library(file)};
        index = n + 1;
        atomic_store_explicit(&count, n + 1, memory_order_release);
    } else {
        free(function);
        free(file);
    }
    Py_INCREF(code); /* kept for the life of the process: its address stays its own */
    table_code[i] = code;
    table_index[i] = index;
    return index;
}

/* The calling thread's frames, innermost first; the GIL is held. */
static size_t walk_live(uint64_t *keys, size_t max) {
    if (PyErr_Occurred() != NULL) return 0; /* a call made during error handling: left alone */
    int gc_was_on = PyGC_Disable();
    size_t n = 0;
    PyObject *frame = (PyObject *)PyEval_GetFrame();
    Py_XINCREF(frame);
    while (frame != NULL && frame != Py_None && n < max) {
        PyCodeObject *code = PyFrame_GetCode((PyFrameObject *)frame);
        int line = PyFrame_GetLineNumber((PyFrameObject *)frame);
        uint32_t index = code_index((PyObject *)code);
        Py_DECREF(code);
        if (index == 0) atomic_fetch_add_explicit(&codes_unnamed, 1, memory_order_relaxed);
        uint64_t l = line > 0 && (uint64_t)line <= LINE_MASK ? (uint64_t)line : 0;
        keys[n++] = (uint64_t)index << LINE_BITS | l;
        PyObject *back = PyObject_GetAttr(frame, str_f_back);
        Py_DECREF(frame);
        frame = back;
    }
    Py_XDECREF(frame);
    PyErr_Clear(); /* a failed f_back ends the walk, nothing more */
    if (gc_was_on) PyGC_Enable();
    return n;
}

static size_t walk(uint64_t *keys, size_t max, void *user) {
    (void)user;
    if (!atomic_load_explicit(&walking, memory_order_acquire) || max == 0) return 0;
    if (gil_held()) return walk_live(keys, max);
    if (captured.depth == 0) return 0; /* the GIL is elsewhere and no capture point is open */
    captured.wanted = 1;
    size_t n = captured.n < max ? captured.n : max;
    memcpy(keys, captured.keys, n * sizeof *keys);
    return n;
}

int gpufl__py_frames_capture(int walk_now) {
    if (captured.depth++ > 0) return 0; /* the outermost point names the caller */
    captured.n = 0;
    captured.wanted = 0;
    int walk = walk_now && atomic_load_explicit(&walking, memory_order_relaxed) &&
               gpufl_interp_capturing();
    if (walk) {
        captured.n = (uint32_t)walk_live(captured.keys, KEYS_MAX);
        atomic_fetch_add_explicit(&capture_walks, 1, memory_order_relaxed);
    }
    return walk;
}

int gpufl__py_frames_release(void) {
    if (captured.depth == 0 || --captured.depth > 0) return 0;
    captured.n = 0;
    return captured.wanted;
}

static int describe(uint64_t key, gpufl_interp_frame_t *out, void *user) {
    (void)user;
    uint64_t index = key >> LINE_BITS;
    if (index == 0 || index > atomic_load_explicit(&count, memory_order_acquire)) return 0;
    const code_info_t *c = &infos[index - 1];
    *out = (gpufl_interp_frame_t){c->function, c->file, (int)(key & LINE_MASK), c->library};
    return 1;
}

/* _frames_start(library_dirs): registers the provider and starts walking.
 * library_dirs: the directories whose code is not the application's (the
 * standard library, site-packages); taken on the first call only. */
PyObject *gpufl__py_frames_start(PyObject *module, PyObject *dirs) {
    if (!PyList_Check(dirs)) return gpufl__py_type_error("library_dirs", "a list", dirs);
    if (str_f_back == NULL) {
        str_f_back = PyUnicode_InternFromString("f_back");
        str_co_qualname = PyUnicode_InternFromString("co_qualname");
        str_co_filename = PyUnicode_InternFromString("co_filename");
        if (!str_f_back || !str_co_qualname || !str_co_filename) return NULL;
        for (Py_ssize_t i = 0; i < PyList_Size(dirs) && n_prefixes < PREFIX_MAX; i++) {
            const char *dir;
            PyObject *item = PyList_GetItem(dirs, i);
            if (!PyUnicode_Check(item)) return gpufl__py_type_error("a library dir", "a str", item);
            if (gpufl__py_utf8(item, "library dir", &dir) < 0) return NULL;
            size_t len = strlen(dir);
            while (len > 1 && dir[len - 1] == '/') len--;
            if (len == 0) continue;
            if ((prefixes[n_prefixes] = strndup(dir, len)) == NULL) return PyErr_NoMemory();
            n_prefixes++;
        }
    }
    static const char *const names[] = {"PyThreadState_GetUnchecked",
                                        "_PyThreadState_UncheckedGet"};
    for (size_t i = 0; i < 2 && unchecked_tstate == NULL; i++)
        unchecked_tstate = (PyThreadState * (*)(void)) dlsym(RTLD_DEFAULT, names[i]);
    gpufl_interp_t interp = {sizeof interp, "python", (const void *)PyEval_GetFrame,
                             walk,          describe, NULL};
    int rc = gpufl_interp_register(&interp);
    if (rc != 0) return gpufl__py_raise(module, rc);
    atomic_store_explicit(&walking, 1, memory_order_release);
    Py_RETURN_NONE;
}

/* _frames_stop(): walks give nothing from here on (at interpreter exit,
 * before the threads' states go away). Frames already taken are still
 * described. */
PyObject *gpufl__py_frames_stop(PyObject *module, PyObject *unused) {
    (void)module, (void)unused;
    atomic_store_explicit(&walking, 0, memory_order_release);
    Py_RETURN_NONE;
}

/* _frames_capture(): opens a capture point (see the top of this file). */
PyObject *gpufl__py_frames_capture_point(PyObject *module, PyObject *unused) {
    (void)module, (void)unused;
    gpufl__py_frames_capture(1);
    Py_RETURN_NONE;
}

/* _frames_release(): closes the innermost capture point. */
PyObject *gpufl__py_frames_release_point(PyObject *module, PyObject *unused) {
    (void)module, (void)unused;
    (void)gpufl__py_frames_release();
    Py_RETURN_NONE;
}

/* _frames_stats() -> (code objects described, frames of code not described,
 * walks made at capture points). */
PyObject *gpufl__py_frames_capturing(PyObject *module, PyObject *unused) {
    (void)module, (void)unused;
    return PyBool_FromLong(gpufl_interp_capturing());
}

PyObject *gpufl__py_frames_stats(PyObject *module, PyObject *unused) {
    (void)module, (void)unused;
    return Py_BuildValue(
        "(KKK)", (unsigned long long)atomic_load_explicit(&count, memory_order_acquire),
        (unsigned long long)atomic_load_explicit(&codes_unnamed, memory_order_relaxed),
        (unsigned long long)atomic_load_explicit(&capture_walks, memory_order_relaxed));
}
