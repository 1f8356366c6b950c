/* Connected components of jobs' node sets on grids and hypercubes, compiled (see locality.py, _components).
 *
 * components(nodes, offsets, dims, strides, wrap, stamp, index, state, out) -> None
 *
 * Job j's nodes are nodes[offsets[j]:offsets[j+1]] (distinct node ids of one machine whose id is
 * sum(c_i * strides[i]), coordinates c_i in 0 .. dims[i]-1).  Two of a job's nodes are joined
 * when they differ by one step in one dimension (round the wrap link where wrap[i]); a hypercube
 * is the grid of dims (2, ..., 2).  out[j] receives the number of connected components.
 *
 * `stamp` and `index` are int32 work arrays with one entry per node of the machine, kept by the
 * caller between calls: a node belongs to the job being counted iff stamp[node] == that job's
 * token, so nothing is cleared between jobs.  `state` (int64, one item) holds the last token used and
 * is updated here, under the GIL with the stamps, so threads sharing the work arrays cannot reuse a
 * token (the stamps are cleared when tokens would overflow).  Union-find with path halving:
 * O(k * dims) per job of k nodes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MAXD 32

static Py_ssize_t find(int32_t *parent, Py_ssize_t x) {
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

static int get(PyObject *o, Py_buffer *b, Py_ssize_t itemsize, int writable, const char *name) {
    if (PyObject_GetBuffer(o, b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0) return -1;
    if (b->itemsize != itemsize || b->ndim != 1) {
        PyErr_Format(PyExc_ValueError, "%s: expected a one-dimensional array of %zd-byte items", name, itemsize);
        PyBuffer_Release(b);
        b->obj = NULL;
        return -1;
    }
    return 0;
}

static int ints(PyObject *seq, long long *out, Py_ssize_t *n, const char *name) {
    PyObject *f = PySequence_Fast(seq, name);
    if (!f) return -1;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(f);
    if (m < 1 || m > MAXD) {
        Py_DECREF(f);
        PyErr_Format(PyExc_ValueError, "%s: expected 1 to %d values, got %zd", name, MAXD, m);
        return -1;
    }
    for (Py_ssize_t i = 0; i < m; i++) {
        out[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(f, i));
        if (out[i] == -1 && PyErr_Occurred()) { Py_DECREF(f); return -1; }
    }
    Py_DECREF(f);
    *n = m;
    return 0;
}

PyDoc_STRVAR(components_doc,
"components(nodes, offsets, dims, strides, wrap, stamp, index, state, out) -> None\n\n"
"Connected components of every job's nodes on a grid (see the module notes).");

static PyObject *py_components(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 9) return PyErr_Format(PyExc_TypeError, "components: expected 9 arguments, got %zd", nargs);
    long long dims[MAXD], strides[MAXD], wrap[MAXD];
    Py_ssize_t d, d2, d3;
    if (ints(args[2], dims, &d, "dims") < 0 || ints(args[3], strides, &d2, "strides") < 0 || ints(args[4], wrap, &d3, "wrap") < 0) return NULL;
    if (d2 != d || d3 != d) return PyErr_Format(PyExc_ValueError, "components: dims, strides and wrap differ in length");
    Py_buffer bn = {0}, bo = {0}, bs = {0}, bi = {0}, bout = {0}, bt = {0};
    PyObject *result = NULL;
    int32_t *parent = NULL;
    if (PyObject_GetBuffer(args[0], &bn, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    if (bn.itemsize != 8 || bn.ndim != 1) { PyErr_SetString(PyExc_ValueError, "nodes: expected int64"); goto done; }
    if (PyObject_GetBuffer(args[1], &bo, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) goto done;
    if (bo.itemsize != 8 || bo.ndim != 1 || bo.shape[0] < 1) { PyErr_SetString(PyExc_ValueError, "offsets: expected int64, at least one"); goto done; }
    if (get(args[5], &bs, 4, 1, "stamp") < 0 || get(args[6], &bi, 4, 1, "index") < 0 || get(args[7], &bt, 8, 1, "state") < 0 ||
        get(args[8], &bout, 8, 1, "out") < 0) goto done;
    if (bt.shape[0] != 1) { PyErr_SetString(PyExc_ValueError, "state: expected one item"); goto done; }
    long long token = *(int64_t *)bt.buf;
    const int64_t *v = (const int64_t *)bn.buf, *off = (const int64_t *)bo.buf;
    int32_t *stamp = (int32_t *)bs.buf, *index = (int32_t *)bi.buf;
    int64_t *out = (int64_t *)bout.buf;
    Py_ssize_t k = bn.shape[0], m = bo.shape[0] - 1, n = bs.shape[0];
    if (bi.shape[0] != n || bout.shape[0] != m || off[0] != 0 || off[m] != k) { PyErr_SetString(PyExc_ValueError, "components: inconsistent sizes"); goto done; }
    Py_ssize_t longest = 0;
    for (Py_ssize_t j = 0; j < m; j++) {
        if (off[j + 1] < off[j]) { PyErr_SetString(PyExc_ValueError, "offsets: expected non-decreasing"); goto done; }
        if (off[j + 1] - off[j] > longest) longest = off[j + 1] - off[j];
    }
    for (Py_ssize_t t = 0; t < k; t++)
        if (v[t] < 0 || v[t] >= n) { PyErr_Format(PyExc_ValueError, "node %lld out of range 0..%zd", (long long)v[t], n - 1); goto done; }
    parent = (int32_t *)PyMem_Malloc((size_t)(longest ? longest : 1) * sizeof(int32_t));
    if (!parent) { PyErr_NoMemory(); goto done; }
    if (token < 0 || token + m >= INT32_MAX) {  /* start the stamps afresh */
        memset(stamp, 0, (size_t)n * sizeof(int32_t));
        token = 0;
    }
    /* a power-of-two stride and side (every hypercube dimension) is a shift and a mask, not a division */
    int shift[MAXD];
    for (Py_ssize_t i = 0; i < d; i++) {
        shift[i] = -1;
        if (strides[i] > 0 && (strides[i] & (strides[i] - 1)) == 0 && dims[i] > 0 && (dims[i] & (dims[i] - 1)) == 0) {
            int sh = 0;
            while ((1LL << sh) < strides[i]) sh++;
            shift[i] = sh;
        }
    }
    for (Py_ssize_t j = 0; j < m; j++) {
        Py_ssize_t a = off[j], b = off[j + 1], size = b - a;
        int32_t tk = (int32_t)++token;
        for (Py_ssize_t t = 0; t < size; t++) {
            stamp[v[a + t]] = tk;
            index[v[a + t]] = (int32_t)t;
            parent[t] = (int32_t)t;
        }
        Py_ssize_t comps = size;
        for (Py_ssize_t t = 0; t < size; t++) {
            long long x = v[a + t];
            for (Py_ssize_t i = 0; i < d; i++) {
                long long D = dims[i];
                if (D < 2) continue;
                long long c = shift[i] >= 0 ? (x >> shift[i]) & (D - 1) : (x / strides[i]) % D, nb;
                if (c + 1 < D) nb = x + strides[i];
                else if (wrap[i]) nb = x - (D - 1) * strides[i];
                else continue;
                if (nb < 0 || nb >= n || stamp[nb] != tk) continue;
                Py_ssize_t r1 = find(parent, t), r2 = find(parent, index[nb]);
                if (r1 != r2) {
                    parent[r1 > r2 ? r1 : r2] = (int32_t)(r1 > r2 ? r2 : r1);
                    comps--;
                }
            }
        }
        out[j] = comps;
    }
    *(int64_t *)bt.buf = token;
    Py_INCREF(Py_None);
    result = Py_None;
done:
    PyMem_Free(parent);
    if (bn.obj) PyBuffer_Release(&bn);
    if (bo.obj) PyBuffer_Release(&bo);
    if (bs.obj) PyBuffer_Release(&bs);
    if (bi.obj) PyBuffer_Release(&bi);
    if (bout.obj) PyBuffer_Release(&bout);
    if (bt.obj) PyBuffer_Release(&bt);
    return result;
}

static PyMethodDef methods[] = {
    {"components", (PyCFunction)(void (*)(void))py_components, METH_FASTCALL, components_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cmetrics", "Compiled locality metrics (see locality.py).", -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__cmetrics(void) { return PyModule_Create(&module); }
