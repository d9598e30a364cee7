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

/* The operation of this thread's open push (aten calls do not nest under
 * gpufl.torch's mode), for its pop. */
static __thread int open_index, open_walked;

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
 * _op_pop on the same thread. Also a capture point
 * (frames.c): the operation's kernels get the Python frames of its caller,
 * since PyTorch runs it with the GIL released. */
PyObject *gpufl__py_op_push(PyObject *module, PyObject *arg) {
    (void)module;
    long i = PyLong_AsLong(arg);
    if (i == -1 && PyErr_Occurred()) return NULL;
    int known = i > 0 && i <= GPUFL_OPS_MAX;
    int index = known ? (int)i : 0;
    open_walked = gpufl__py_frames_capture(needs_frames[index] || probed[index] < PROBE_CALLS);
    open_index = index;
    if (!known) return PyLong_FromLong(0);
    return PyLong_FromUnsignedLongLong(gpufl_op_push(index));
}

/* _op_pop(call id): ends the call, and closes the capture point of its push. */
PyObject *gpufl__py_op_pop(PyObject *module, PyObject *id) {
    (void)module;
    /* First: every push is followed by one pop, even a bad one. */
    int index = open_index;
    if (gpufl__py_frames_release()) /* a CUDA call inside asked for the frames */
        needs_frames[index] = 1;
    else if (open_walked && probed[index] < PROBE_CALLS) /* walked, and nobody asked */
        probed[index]++;
    unsigned long long v = PyLong_AsUnsignedLongLong(id);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    gpufl_op_pop(v);
    Py_RETURN_NONE;
}
