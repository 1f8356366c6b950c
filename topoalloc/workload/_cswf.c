/*
 * The SWF body, parsed straight from the file's bytes into the table of
 * numbers (see swf.py, whose pure-Python reader is the reference).
 *
 * Only the plain case is handled here: ASCII, fields separated by spaces,
 * a header of comment and blank lines, then job lines of exactly 18 numbers
 * written as [+-]digits[.digits][e[+-]digits].  Anything else (a tab, a
 * carriage return, a comment or blank line among the jobs, another field
 * count, a word, a non-finite value, a byte outside ASCII) returns None and
 * the Python reader takes over, which gives the same table or names the
 * line that is wrong.  Numbers are converted as the Python reader's numpy
 * parser converts them: PyOS_string_to_double (correctly rounded), or, for a
 * whole number below 2**53, exactly.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define NFIELDS 18

/* 1 for a byte that may appear in the header's comment lines (printable ASCII and space) */
static inline int header_byte(unsigned char c) { return c >= 0x20 && c < 0x7f; }

/* one number [+-]digits[.digits][(e|E)[+-]digits] in [p, end); 0 and *out, or -1 if not that */
static int number(const char *p, const char *end, double *out) {
    const char *s = p;
    int neg = 0;
    if (s < end && (*s == '+' || *s == '-')) { neg = *s == '-'; s++; }
    const char *d0 = s;
    uint64_t u = 0;
    int nd = 0;
    while (s < end && *s >= '0' && *s <= '9') {
        if (nd < 19) u = u * 10 + (uint64_t)(*s - '0');
        nd++;
        s++;
    }
    int frac = 0, nf = 0;
    if (s < end && *s == '.') {
        frac = 1;
        s++;
        while (s < end && *s >= '0' && *s <= '9') { s++; nf++; }
    }
    if (nd + nf == 0) return -1;
    int expo = 0;
    if (s < end && (*s == 'e' || *s == 'E')) {
        expo = 1;
        s++;
        if (s < end && (*s == '+' || *s == '-')) s++;
        int ne = 0;
        while (s < end && *s >= '0' && *s <= '9') { s++; ne++; }
        if (!ne) return -1;
    }
    if (s != end) return -1;
    if (!frac && !expo && nd <= 15) { /* a whole number below 10**15 < 2**53: exact */
        (void)d0;
        double v = (double)u;
        *out = neg ? -v : v;
        return 0;
    }
    char buf[128];
    size_t len = (size_t)(end - p);
    if (len >= sizeof buf) return -1;
    memcpy(buf, p, len);
    buf[len] = '\0';
    char *stop = NULL;
    double v = PyOS_string_to_double(buf, &stop, NULL);
    if (v == -1.0 && PyErr_Occurred()) { PyErr_Clear(); return -1; }
    if (stop != buf + len || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

PyDoc_STRVAR(parse_doc,
"parse(data) -> None | (header_bytes, header_lines, rows, table)\n\n"
"Parse SWF text (bytes): the header's length in bytes and in lines, the number\n"
"of job lines and a bytearray of rows x 18 float64 values; None if the text is\n"
"not the plain case (the Python reader then decides).");

static PyObject *py_parse(PyObject *self, PyObject *arg) {
    (void)self;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    const char *data = view.buf, *end = data + view.len;
    PyObject *result = NULL, *table = NULL;
    /* the header: blank lines and lines whose first non-space byte is ';' */
    const char *p = data;
    Py_ssize_t hlines = 0;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *le = eol ? eol : end;
        const char *q = p;
        while (q < le && *q == ' ') q++;
        if (q < le && *q != ';') break; /* the first job line */
        for (const char *c = q; c < le; c++)
            if (!header_byte((unsigned char)*c)) goto plain_no;
        hlines++;
        p = eol ? eol + 1 : end;
    }
    Py_ssize_t hbytes = p - data;
    /* the body: count its lines (a last line without '\n' counts; a final empty one does not) */
    Py_ssize_t rows = 0;
    for (const char *q = p; q < end;) {
        const char *eol = memchr(q, '\n', (size_t)(end - q));
        rows++;
        q = eol ? eol + 1 : end;
    }
    if (!rows) goto plain_no;
    if (rows > PY_SSIZE_T_MAX / (NFIELDS * (Py_ssize_t)sizeof(double))) goto plain_no;
    table = PyByteArray_FromStringAndSize(NULL, rows * NFIELDS * (Py_ssize_t)sizeof(double));
    if (!table) goto done;
    double *out = (double *)PyByteArray_AS_STRING(table);
    for (Py_ssize_t r = 0; r < rows; r++) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *le = eol ? eol : end;
        int f = 0;
        const char *q = p;
        for (;;) {
            while (q < le && *q == ' ') q++;
            if (q >= le) break;
            const char *t = q;
            while (q < le && *q != ' ') q++;
            if (f == NFIELDS || number(t, q, &out[r * NFIELDS + f]) < 0) goto plain_no;
            f++;
        }
        if (f != NFIELDS) goto plain_no; /* also a blank line among the jobs */
        p = eol ? eol + 1 : end;
    }
    result = Py_BuildValue("(nnnO)", hbytes, hlines, rows, table);
    goto done;
plain_no:
    result = Py_None;
    Py_INCREF(result);
done:
    Py_XDECREF(table);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"parse", py_parse, METH_O, parse_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cswf", "Compiled parser of plain SWF text (see swf.py).", -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__cswf(void) { return PyModule_Create(&module); }
