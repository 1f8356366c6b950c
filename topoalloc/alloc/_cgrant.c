/* The base allocator's grant check and busy marks, compiled (see base.py, Allocator._checked).
 *
 * take(idx, busy, size) checks a granted node array in place and, only if every check passes,
 * marks its nodes busy:
 *   0  ok: idx is sorted ascending (sorted here if it was not and is short), has no repeat, lies
 *      in 0 .. len(busy) - 1, was all free, and is now marked busy;
 *   1  fewer than `size` nodes;   2  a node repeated;   3  a node out of range;   4  a busy node;
 *   5  not sorted and longer than SORT_HERE: nothing checked (numpy's sort is much faster than
 *      qsort on long arrays; the caller sorts and asks again).
 * On any status but 0 nothing is marked and the caller re-checks with numpy for its message.
 * clear(nodes, busy) marks the nodes free again (release).  Both take buffers: `idx`/`nodes`
 * int64 and one-dimensional, `busy` one byte per node (numpy bool) and writable.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* longest grant sorted here (insertion sort); longer unsorted grants are left to numpy */
#define SORT_HERE 256

static void sort_small(int64_t *v, Py_ssize_t n) {
    for (Py_ssize_t i = 1; i < n; i++) {
        int64_t t = v[i];
        Py_ssize_t j = i;
        while (j > 0 && v[j - 1] > t) { v[j] = v[j - 1]; j--; }
        v[j] = t;
    }
}

static int get(PyObject *o, Py_buffer *b, Py_ssize_t itemsize, const char *name) {
    if (PyObject_GetBuffer(o, b, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    if (b->itemsize != itemsize || b->ndim != 1) {
        PyErr_Format(PyExc_ValueError, "%s: expected a one-dimensional array of %zd-byte items", name, itemsize);
        PyBuffer_Release(b);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(take_doc,
"take(idx, busy, size) -> int\n\n"
"Check the grant `idx` (int64, sorted in place if needed) against `busy` (bool) and, if it\n"
"passes, mark it busy.  0 ok; 1 fewer than `size` nodes; 2 a repeat; 3 out of range; 4 busy;\n"
"5 unsorted and long, or unsorted and read-only: sort (a copy) and ask again.");

static PyObject *py_take(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 3) return PyErr_Format(PyExc_TypeError, "take: expected 3 arguments, got %zd", nargs);
    Py_ssize_t size = PyLong_AsSsize_t(args[2]);
    if (size == -1 && PyErr_Occurred()) return NULL;
    Py_buffer bi, bb;
    int readonly = 0; /* a read-only grant is checked as it is, never sorted here */
    if (PyObject_GetBuffer(args[0], &bi, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        if (PyObject_GetBuffer(args[0], &bi, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
        readonly = 1;
    }
    if (bi.itemsize != 8 || bi.ndim != 1) {
        PyBuffer_Release(&bi);
        return PyErr_Format(PyExc_ValueError, "idx: expected a one-dimensional array of 8-byte items");
    }
    if (get(args[1], &bb, 1, "busy") < 0) { PyBuffer_Release(&bi); return NULL; }
    int64_t *v = (int64_t *)bi.buf;
    unsigned char *busy = (unsigned char *)bb.buf;
    Py_ssize_t n = bi.shape[0], nb = bb.shape[0];
    long st = 0;
    if (n < size || n == 0) { st = 1; goto done; }
    for (Py_ssize_t i = 1; i < n; i++) {
        if (v[i] <= v[i - 1]) {
            if (n > SORT_HERE || readonly) { st = 5; goto done; }
            sort_small(v, n);
            break;
        }
    }
    for (Py_ssize_t i = 1; i < n; i++) {
        if (v[i] == v[i - 1]) { st = 2; goto done; }
    }
    if (v[0] < 0 || v[n - 1] >= (int64_t)nb) { st = 3; goto done; }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (busy[v[i]]) { st = 4; goto done; }
    }
    for (Py_ssize_t i = 0; i < n; i++) busy[v[i]] = 1;
done:
    PyBuffer_Release(&bi);
    PyBuffer_Release(&bb);
    return PyLong_FromLong(st);
}

PyDoc_STRVAR(clear_doc, "clear(nodes, busy) -> None\n\nMark `nodes` (int64, in range: a held grant) free in `busy`.");

static PyObject *py_clear(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2) return PyErr_Format(PyExc_TypeError, "clear: expected 2 arguments, got %zd", nargs);
    Py_buffer bi, bb;
    if (PyObject_GetBuffer(args[0], &bi, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    if (bi.itemsize != 8 || bi.ndim != 1) {
        PyBuffer_Release(&bi);
        return PyErr_Format(PyExc_ValueError, "nodes: expected a one-dimensional array of 8-byte items");
    }
    if (get(args[1], &bb, 1, "busy") < 0) { PyBuffer_Release(&bi); return NULL; }
    const int64_t *v = (const int64_t *)bi.buf;
    unsigned char *busy = (unsigned char *)bb.buf;
    Py_ssize_t n = bi.shape[0], nb = bb.shape[0];
    for (Py_ssize_t i = 0; i < n; i++) {
        if (v[i] < 0 || v[i] >= (int64_t)nb) {
            PyBuffer_Release(&bi);
            PyBuffer_Release(&bb);
            return PyErr_Format(PyExc_ValueError, "clear: node %lld out of range 0..%zd", (long long)v[i], nb - 1);
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) busy[v[i]] = 0;
    PyBuffer_Release(&bi);
    PyBuffer_Release(&bb);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"take", (PyCFunction)(void (*)(void))py_take, METH_FASTCALL, take_doc},
    {"clear", (PyCFunction)(void (*)(void))py_clear, METH_FASTCALL, clear_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cgrant", "The base allocator's grant check, compiled (see base.py).", -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__cgrant(void) { return PyModule_Create(&module); }
