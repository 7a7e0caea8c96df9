/* Counts the interpreter's allocations for perf/turn_audit.py: wraps the object and mem domains' allocators
 * (PyMem_SetAllocator) and keeps the counts in a file it maps shared, so that the measuring process reads
 * them while the broker runs, without a signal or a request to the broker.
 *
 * Slots of the mapped file (uint64 each): 0 object-domain mallocs + callocs (PyObject_Malloc: nearly every
 * object that does not come from a free list), 1 object-domain reallocs, 2 object-domain frees, 3 mem-domain
 * mallocs + callocs (PyMem_Malloc: list item arrays, buffers), 4 mem-domain reallocs, 5 mem-domain frees.
 * Both domains are called with the GIL held, so plain increments are exact.
 *
 * While slot 7 is non-zero (turn_audit sets it around a scenario with --where), one object-domain allocation
 * in SAMPLE_EVERY records its native return addresses; `dump(path)` (sitecustomize calls it at exit) writes
 * one line per sample: the names of the frames outside the interpreter (mypyc's CPyDef_* functions, the C
 * wire loops, uvloop's Cython), innermost first, or "(interpreted)" for code the interpreter ran itself. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#define SLOTS 8
static volatile uint64_t *counts;
static PyMemAllocatorEx obj_orig, mem_orig;

#define SAMPLE_EVERY 61
#define DEPTH 16
#define MAX_SAMPLES 100000
static void *samples[MAX_SAMPLES][DEPTH];
static int sampled, inside;
static uint64_t until_sample = SAMPLE_EVERY;

static inline void maybe_sample(void) {
    if (!counts[7] || inside || sampled >= MAX_SAMPLES || --until_sample) return;
    until_sample = SAMPLE_EVERY;
    inside = 1;
    memset(samples[sampled], 0, sizeof samples[sampled]);
    backtrace(samples[sampled], DEPTH);
    sampled++;
    inside = 0;
}

static void *obj_malloc(void *ctx, size_t n) { counts[0]++; maybe_sample(); return obj_orig.malloc(obj_orig.ctx, n); }
static void *obj_calloc(void *ctx, size_t k, size_t n) { counts[0]++; maybe_sample(); return obj_orig.calloc(obj_orig.ctx, k, n); }
static void *obj_realloc(void *ctx, void *p, size_t n) { counts[1]++; return obj_orig.realloc(obj_orig.ctx, p, n); }
static void obj_free(void *ctx, void *p) { if (p) counts[2]++; obj_orig.free(obj_orig.ctx, p); }
static void *mem_malloc(void *ctx, size_t n) { counts[3]++; return mem_orig.malloc(mem_orig.ctx, n); }
static void *mem_calloc(void *ctx, size_t k, size_t n) { counts[3]++; return mem_orig.calloc(mem_orig.ctx, k, n); }
static void *mem_realloc(void *ctx, void *p, size_t n) { counts[4]++; return mem_orig.realloc(mem_orig.ctx, p, n); }
static void mem_free(void *ctx, void *p) { if (p) counts[5]++; mem_orig.free(mem_orig.ctx, p); }

static PyObject *install(PyObject *self, PyObject *arg) {
    const char *path = PyUnicode_AsUTF8(arg);
    if (path == NULL) return NULL;
    if (counts != NULL) Py_RETURN_NONE;
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, SLOTS * sizeof(uint64_t)) != 0) return PyErr_SetFromErrnoWithFilename(PyExc_OSError, path);
    void *map = mmap(NULL, SLOTS * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return PyErr_SetFromErrnoWithFilename(PyExc_OSError, path);
    counts = (volatile uint64_t *)map;
    PyMemAllocatorEx obj = {NULL, obj_malloc, obj_calloc, obj_realloc, obj_free};
    PyMemAllocatorEx mem = {NULL, mem_malloc, mem_calloc, mem_realloc, mem_free};
    PyMem_GetAllocator(PYMEM_DOMAIN_OBJ, &obj_orig);
    PyMem_GetAllocator(PYMEM_DOMAIN_MEM, &mem_orig);
    PyMem_SetAllocator(PYMEM_DOMAIN_OBJ, &obj);
    PyMem_SetAllocator(PYMEM_DOMAIN_MEM, &mem);
    Py_RETURN_NONE;
}

/* Whether `name` is a frame of our own or the interpreter's, which say nothing of the caller. */
static int skipped(const char *file) {
    return strstr(file, "libpython") != NULL || strstr(file, "_allocprobe") != NULL || strstr(file, "libc.so") != NULL ||
           strstr(file, "/python3") != NULL;
}

static PyObject *dump(PyObject *self, PyObject *arg) {
    const char *path = PyUnicode_AsUTF8(arg);
    if (path == NULL) return NULL;
    FILE *out = fopen(path, "w");
    if (out == NULL) return PyErr_SetFromErrnoWithFilename(PyExc_OSError, path);
    for (int i = 0; i < sampled; i++) {
        int written = 0;
        for (int j = 2; j < DEPTH && samples[i][j] != NULL; j++) {
            Dl_info info;
            if (!dladdr(samples[i][j], &info) || info.dli_fname == NULL || skipped(info.dli_fname)) continue;
            fprintf(out, "%s%s", written ? " < " : "", info.dli_sname ? info.dli_sname : info.dli_fname);
            if (++written == 4) break;
        }
        fprintf(out, "%s\n", written ? "" : "(interpreted)");
    }
    fclose(out);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {{"install", install, METH_O, "count allocations into the file at the path"},
                                {"dump", dump, METH_O, "write the sampled allocation sites to the path"},
                                {NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_allocprobe", NULL, -1, methods};
PyMODINIT_FUNC PyInit__allocprobe(void) { return PyModule_Create(&module); }
