/*
 * ops.c - framework operation tagging for gpufl.torch (gpufl_ops.h): the
 * three calls its dispatch hook makes, kept to one C call each because they
 * run around every aten operation.
 */
#include "gpufl_py.h"

#include <gpufl/gpufl_ops.h>

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
PyObject *gpufl__py_op_push(PyObject *module, PyObject *index) {
    (void)module;
    long i = PyLong_AsLong(index);
    if (i == -1 && PyErr_Occurred()) return NULL;
    gpufl__py_frames_capture();
    if (i <= 0 || i > GPUFL_OPS_MAX) return PyLong_FromLong(0);
    return PyLong_FromUnsignedLongLong(gpufl_op_push((int)i));
}

/* _op_pop(call id): ends the call, and closes the capture point of its push. */
PyObject *gpufl__py_op_pop(PyObject *module, PyObject *id) {
    (void)module;
    gpufl__py_frames_release(); /* first: every push is followed by one pop, even a bad one */
    unsigned long long v = PyLong_AsUnsignedLongLong(id);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    gpufl_op_pop(v);
    Py_RETURN_NONE;
}
