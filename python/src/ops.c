// SPDX-License-Identifier: Apache-2.0
/*
 * ops.c - framework operation tagging for gpufl.torch (gpufl_ops.h): the
 * three calls its dispatch hook makes, kept to one C call each because they
 * run around every aten operation.
 */
#include "gpufl_py.h"

#include <gpufl/gpufl_ops.h>

#include <stdint.h>

/* Whether an operation's calls need their Python frames: an operation
 * whose first calls made no CUDA call that captured a stack (views,
 * transposes, shape queries: most aten calls launch nothing) is not walked
 * again, which saves most of the walks; one that did is walked every call.
 * Under the GIL. */
#define PROBE_CALLS 2
static uint8_t needs_frames[GPUFL_OPS_MAX + 1], probed[GPUFL_OPS_MAX + 1];

/* This thread's open calls, innermost last: what _op_pop undoes. Kept here
 * rather than handed back to Python, so that an exception between the push
 * and the Python code's try (a KeyboardInterrupt) cannot leave a capture
 * point open or an id on CUPTI's stack: the pop needs nothing from Python.
 * Deeper calls than OPEN_MAX are still balanced, but untagged. */
#define OPEN_MAX 32
static __thread struct {
    int depth;
    struct {
        int index, walked;
        uint64_t id;
    } call[OPEN_MAX];
} open_calls;

/* _op_register(name) -> index */
PyObject *gpufl__py_op_register(PyObject *module, PyObject *name) {
    const char *s;
    if (!PyUnicode_Check(name)) return gpufl__py_type_error("operation name", "a str", name);
    if (gpufl__py_utf8(name, "operation name", &s) < 0) return NULL;
    int index = gpufl_op_register(s);
    if (index < 0) return gpufl__py_raise(module, index);
    return PyLong_FromLong(index);
}

/* _op_push(index) -> call id (0: nothing pushed); always followed by one
 * _op_pop() on the same thread, even when it raised. Also a capture point
 * (frames.c): the operation's kernels get the Python frames of its caller,
 * since PyTorch runs it with the GIL released. */
PyObject *gpufl__py_op_push(PyObject *module, PyObject *arg) {
    (void)module;
    /* The call is opened (and its capture point) whatever happens below:
     * the pop that follows must find it. */
    long i = PyLong_AsLong(arg);
    int bad = i == -1 && PyErr_Occurred() != NULL;
    int d = open_calls.depth++;
    int index = !bad && i > 0 && i <= GPUFL_OPS_MAX && d < OPEN_MAX ? (int)i : 0;
    int walked =
        gpufl__py_frames_capture(!bad && (needs_frames[index] || probed[index] < PROBE_CALLS));
    uint64_t id = index ? gpufl_op_push(index) : 0;
    if (d < OPEN_MAX) {
        open_calls.call[d].index = index;
        open_calls.call[d].walked = walked;
        open_calls.call[d].id = id;
    }
    if (bad) return NULL;
    return PyLong_FromUnsignedLongLong(id);
}

/* _op_pop(): ends this thread's innermost open call: pops its id and
 * closes its capture point. Nothing when no call is open. */
PyObject *gpufl__py_op_pop(PyObject *module, PyObject *unused) {
    (void)module, (void)unused;
    if (open_calls.depth == 0) Py_RETURN_NONE;
    int d = --open_calls.depth;
    if (d >= OPEN_MAX) { /* too deep to have been recorded: its capture point only */
        (void)gpufl__py_frames_release();
        Py_RETURN_NONE;
    }
    int index = open_calls.call[d].index;
    if (gpufl__py_frames_release()) /* a CUDA call inside asked for the frames */
        needs_frames[index] = 1;
    else if (open_calls.call[d].walked && probed[index] < PROBE_CALLS) /* nobody asked */
        probed[index]++;
    gpufl_op_pop(open_calls.call[d].id);
    Py_RETURN_NONE;
}
