/* jit.c -- kernels compiled on first use (cuda/abi/jit.h).
 *
 * A kernel outside the hot set (cuda/abi/hot_set.def) is compiled by NVRTC the first time a process needs it,
 * for the current device's architecture, from the program's text and the cuda/ headers it includes, which the
 * build embedded (jit_sources.h, written by setup.py).  NVRTC and the toolkit's own headers (cuda_fp16.h,
 * cuda/std) are found at run time: $GPUREDUCE_NVRTC, then the toolkit the module was built with ($CUDA_HOME,
 * $CUDA_PATH, else the path recorded at build time), then the loader's search path.
 *
 * The cubin goes to a disk cache ($GPUREDUCE_KERNEL_CACHE, else $XDG_CACHE_HOME/gpureduce/kernels, else
 * ~/.cache/gpureduce/kernels), one file per kernel named by a hash of everything that makes it (the sources,
 * the name, the options, the architecture, the toolkit the module was built with and the driver), so a later
 * process only reads a file, and a stale entry is never read.  A file appears under its name by rename(), whole,
 * so processes that fill the cache at once never read half of one.  In the process, the loaded kernels are kept
 * in a table; one lock orders the table, the compiles and NVRTC's loading, so threads may call in without the GIL.
 */
#define _GNU_SOURCE
#include "ext.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nvrtc.h>

#include "abi/jit.h"
#include "jit_sources.h"

/* Written at the head of each cache file, before the cubin: the format, then the kernel's lowered name. */
#define CACHE_MAGIC "gpureduce-jit 1 "

/* ---------------------------------------------------------------- errors */

static _Thread_local char t_error[4096];

const char *
gr_jit_error(void)
{
    return t_error;
}

static gr_status
fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t_error, sizeof t_error, fmt, ap);
    va_end(ap);
    return GR_ERR_JIT;
}

/* ---------------------------------------------------------------- NVRTC, found at run time */

typedef nvrtcResult (*create_fn)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                                 const char *const *);
typedef nvrtcResult (*compile_fn)(nvrtcProgram, int, const char *const *);
typedef nvrtcResult (*destroy_fn)(nvrtcProgram *);
typedef nvrtcResult (*add_name_fn)(nvrtcProgram, const char *);
typedef nvrtcResult (*lowered_fn)(nvrtcProgram, const char *, const char **);
typedef nvrtcResult (*size_fn)(nvrtcProgram, size_t *);
typedef nvrtcResult (*get_fn)(nvrtcProgram, char *);
typedef const char *(*error_string_fn)(nvrtcResult);
typedef nvrtcResult (*version_fn)(int *, int *);

static struct {
    int tried;
    void *lib;
    char path[1024];   /* the library loaded, or every place tried */
    create_fn create;
    compile_fn compile;
    destroy_fn destroy;
    add_name_fn add_name;
    lowered_fn lowered;
    size_fn log_size, cubin_size;
    get_fn log, cubin;
    error_string_fn error_string;
    version_fn version;
} g_nvrtc;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

/* The toolkit: $CUDA_HOME, $CUDA_PATH, else the one the module was built with. */
static const char *
cuda_home(void)
{
    const char *home = getenv("CUDA_HOME");
    if (!home || !*home) home = getenv("CUDA_PATH");
    return home && *home ? home : GR_JIT_CUDA_HOME;
}

static int
load_nvrtc(void)
{
    if (g_nvrtc.tried) return g_nvrtc.lib != NULL;
    g_nvrtc.tried = 1;
    char in_home[2][512];
    snprintf(in_home[0], sizeof in_home[0], "%s/lib64/libnvrtc.so.%d", cuda_home(), CUDART_VERSION / 1000);
    snprintf(in_home[1], sizeof in_home[1], "%s/lib64/libnvrtc.so", cuda_home());
    char by_version[32];
    snprintf(by_version, sizeof by_version, "libnvrtc.so.%d", CUDART_VERSION / 1000);
    const char *chosen = getenv("GPUREDUCE_NVRTC");
    const char *candidates[] = {chosen && *chosen ? chosen : NULL, in_home[0], in_home[1], by_version, "libnvrtc.so"};
    size_t said = 0;
    g_nvrtc.path[0] = '\0';
    for (size_t i = 0; i < sizeof candidates / sizeof *candidates; i++) {
        if (!candidates[i]) continue;
        g_nvrtc.lib = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);
        if (g_nvrtc.lib) {
            snprintf(g_nvrtc.path, sizeof g_nvrtc.path, "%s", candidates[i]);
            break;
        }
        said += (size_t)snprintf(g_nvrtc.path + said, said < sizeof g_nvrtc.path ? sizeof g_nvrtc.path - said : 0,
                                 "%s%s", said ? ", " : "", candidates[i]);
        if (said >= sizeof g_nvrtc.path) said = sizeof g_nvrtc.path - 1;
        if (chosen && *chosen && i == 0) break; /* an explicit choice is the only one tried */
    }
    if (!g_nvrtc.lib) return 0;
#define GR_NVRTC_SYM(field, name) *(void **)&g_nvrtc.field = dlsym(g_nvrtc.lib, name)
    GR_NVRTC_SYM(create, "nvrtcCreateProgram");
    GR_NVRTC_SYM(compile, "nvrtcCompileProgram");
    GR_NVRTC_SYM(destroy, "nvrtcDestroyProgram");
    GR_NVRTC_SYM(add_name, "nvrtcAddNameExpression");
    GR_NVRTC_SYM(lowered, "nvrtcGetLoweredName");
    GR_NVRTC_SYM(log_size, "nvrtcGetProgramLogSize");
    GR_NVRTC_SYM(log, "nvrtcGetProgramLog");
    GR_NVRTC_SYM(cubin_size, "nvrtcGetCUBINSize");
    GR_NVRTC_SYM(cubin, "nvrtcGetCUBIN");
    GR_NVRTC_SYM(error_string, "nvrtcGetErrorString");
    GR_NVRTC_SYM(version, "nvrtcVersion");
#undef GR_NVRTC_SYM
    if (!g_nvrtc.create || !g_nvrtc.compile || !g_nvrtc.destroy || !g_nvrtc.add_name || !g_nvrtc.lowered ||
        !g_nvrtc.log_size || !g_nvrtc.log || !g_nvrtc.cubin_size || !g_nvrtc.cubin || !g_nvrtc.error_string ||
        !g_nvrtc.version) {
        snprintf(g_nvrtc.path + strlen(g_nvrtc.path), sizeof g_nvrtc.path - strlen(g_nvrtc.path),
                 " (lacks the functions of NVRTC 11.1 and later)");
        dlclose(g_nvrtc.lib);
        g_nvrtc.lib = NULL;
        return 0;
    }
    return 1;
}

/* ---------------------------------------------------------------- the cache's names */

/* A 128-bit FNV-1a of everything that makes a kernel, in two 64-bit lanes with different offsets: a name for
 * the file, not a security boundary (the cache is the user's own). */
typedef struct {
    uint64_t a, b;
} key128;

static void
hash_bytes(key128 *k, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        k->a = (k->a ^ p[i]) * 1099511628211ull;
        k->b = (k->b ^ p[i]) * 1099511628211ull;
    }
    k->a = (k->a ^ 0xff) * 1099511628211ull; /* a separator: ("ab", "c") differs from ("a", "bc") */
    k->b = (k->b ^ 0xfe) * 1099511628211ull;
}

static void
hash_text(key128 *k, const char *s)
{
    hash_bytes(k, s, strlen(s));
}

/* The options NVRTC compiles with for `arch` (sm_XY as XY): the C++ standard of the build, cubin for the
 * architecture, the toolkit's headers, __int128 (the exact sum's window, as nvcc allows it on Linux).
 *
 * A call's first use compiles without -pch: NVRTC's automatic precompiled headers write 60-200 MB a program under
 * $TMPDIR (a tmpfs in RAM on many systems) and remove them only at a normal exit, so a killed process, a Jupyter
 * restart or a multiprocessing child (os._exit) left them for good; they save about 1 s on a process's second and
 * later CUB kernels and cost 0.3-0.6 s on the first, where the kernel cache already makes each kernel a one-time
 * cost.  `warm` asks for them (with_pch): its workers compile hundreds of kernels each, in a temporary folder of
 * their own that warm removes.  Not part of the kernel's key: the cubin is the same. */
#define N_OPTIONS 6
static int
nvrtc_options(int arch, char storage[N_OPTIONS][600], const char *options[N_OPTIONS])
{
    snprintf(storage[0], sizeof storage[0], "-std=c++17");
    snprintf(storage[1], sizeof storage[1], "-arch=sm_%d", arch);
    snprintf(storage[2], sizeof storage[2], "-I%s/include", cuda_home());
    snprintf(storage[3], sizeof storage[3], "-I%s/include/cccl", cuda_home()); /* CCCL's home since CUDA 13 */
    /* the C ABI's host prototypes (abi/gpureduce.h), declared but never called there, as NVRTC accepts them */
    snprintf(storage[4], sizeof storage[4], "-default-device");
    snprintf(storage[5], sizeof storage[5], "-device-int128");
    for (int i = 0; i < N_OPTIONS; i++) options[i] = storage[i];
    return N_OPTIONS;
}

static key128
kernel_key(gr_jit_program program, const char *name, int arch)
{
    /* the program's text and every header's, hashed once per process (a few hundred kB: a quarter of a
     * cached kernel's lookup); callers hold g_lock */
    static key128 sources[GR_JIT_PROGRAM_COUNT];
    static int sources_hashed[GR_JIT_PROGRAM_COUNT];
    if (!sources_hashed[program]) {
        key128 s = {14695981039346656037ull, 0x9ae16a3b2f90404full};
        hash_text(&s, gr_jit_program_sources[program]);
        for (int i = 0; i < GR_JIT_HEADER_COUNT; i++) {
            hash_text(&s, gr_jit_header_names[i]);
            hash_text(&s, gr_jit_header_texts[i]);
        }
        sources[program] = s;
        sources_hashed[program] = 1;
    }
    key128 k = sources[program];
    char storage[N_OPTIONS][600];
    const char *options[N_OPTIONS];
    const int n = nvrtc_options(arch, storage, options);
    hash_text(&k, name);
    for (int i = 0; i < n; i++) hash_text(&k, options[i]);
    int driver = 0;
    (void)cudaDriverGetVersion(&driver); /* 0 on a machine without a driver: a cache filled for elsewhere */
    const int versions[3] = {arch, CUDART_VERSION, driver};
    hash_bytes(&k, versions, sizeof versions);
    return k;
}

/* The cache's folder, made if missing; "" when there is none to be had (then nothing is kept on disk). */
static const char *
cache_dir(void)
{
    static char dir[1024];
    static int made;
    if (made) return dir;
    made = 1;
    const char *set = getenv("GPUREDUCE_KERNEL_CACHE");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (set && *set) snprintf(dir, sizeof dir, "%s", set);
    else if (xdg && *xdg) snprintf(dir, sizeof dir, "%s/gpureduce/kernels", xdg);
    else if (home && *home) snprintf(dir, sizeof dir, "%s/.cache/gpureduce/kernels", home);
    else dir[0] = '\0';
    for (char *p = dir + 1; *dir && *p; p++) { /* mkdir -p */
        if (*p != '/') continue;
        *p = '\0';
        (void)mkdir(dir, 0755);
        *p = '/';
    }
    if (*dir && mkdir(dir, 0755) != 0 && errno != EEXIST) dir[0] = '\0';
    return dir;
}

static void
cache_path(char *path, size_t size, const char *dir, key128 k)
{
    snprintf(path, size, "%s/%016llx%016llx.cubin", dir, (unsigned long long)k.a, (unsigned long long)k.b);
}

/* ---------------------------------------------------------------- compile, keep, read back */

typedef struct {
    char *data;     /* malloc'd: CACHE_MAGIC, the lowered name, '\n', the cubin (the file's bytes) */
    size_t size;
    char name[4096];    /* the lowered name (CUB's kernels have long ones) */
    const char *cubin;  /* inside data */
    size_t cubin_size;
} cache_entry;

static void
entry_free(cache_entry *e)
{
    free(e->data);
    memset(e, 0, sizeof *e);
}

/* Splits a cache file's bytes into name and cubin; 0 if they are not one of ours. */
static int
entry_parse(cache_entry *e)
{
    const size_t magic = strlen(CACHE_MAGIC);
    if (e->size < magic + 2 || memcmp(e->data, CACHE_MAGIC, magic) != 0) return 0;
    const char *end = memchr(e->data + magic, '\n', e->size - magic);
    const size_t name_size = end ? (size_t)(end - e->data) - magic : 0;
    if (!end || name_size == 0 || name_size >= sizeof e->name || (size_t)(end - e->data) + 1 >= e->size) return 0;
    memcpy(e->name, e->data + magic, name_size);
    e->name[name_size] = '\0';
    e->cubin = end + 1;
    e->cubin_size = e->size - (size_t)(end + 1 - e->data);
    return 1;
}

static int
entry_read(const char *path, cache_entry *e)
{
    memset(e, 0, sizeof *e);
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    int ok = fseek(f, 0, SEEK_END) == 0;
    const long size = ok ? ftell(f) : -1;
    ok = ok && size > 0 && fseek(f, 0, SEEK_SET) == 0 && (e->data = malloc((size_t)size + 1)) != NULL &&
         fread(e->data, 1, (size_t)size, f) == (size_t)size;
    fclose(f);
    e->size = ok ? (size_t)size : 0;
    if (!ok || !entry_parse(e)) {
        entry_free(e);
        return 0;
    }
    return 1;
}

/* Writes the entry under `path` whole or not at all: a file of its own, then rename().  Failing to write is not
 * an error (the kernel is still loaded from memory); the cache is only a saving. */
static void
entry_write(const char *path, const cache_entry *e)
{
    char tmp[1100];
    static unsigned counter;
    snprintf(tmp, sizeof tmp, "%s.%ld.%u.tmp", path, (long)getpid(), __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
    const int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) return;
    size_t done = 0;
    while (done < e->size) {
        const ssize_t w = write(fd, e->data + done, e->size - done);
        if (w <= 0) break;
        done += (size_t)w;
    }
    const int closed = close(fd);
    if (done != e->size || closed != 0 || rename(tmp, path) != 0) (void)unlink(tmp);
}

/* NVRTC's cubin of `name` in `program` for `arch`, as a cache entry. */
static gr_status
compile(gr_jit_program program, const char *name, int arch, int with_pch, cache_entry *e)
{
    memset(e, 0, sizeof *e);
    if (!load_nvrtc())
        return fail("gpureduce compiles this kernel on first use (it is outside the hot set, cuda/abi/hot_set.def) "
                    "and needs NVRTC, the CUDA toolkit's run-time compiler, which was not found (tried: %s).  "
                    "Install the toolkit or the nvidia-cuda-nvrtc package, set CUDA_HOME to the toolkit or "
                    "GPUREDUCE_NVRTC to libnvrtc.so, or fill the kernel cache where NVRTC is: "
                    "python -m gpureduce warm", g_nvrtc.path);
    char header_path[600];
    snprintf(header_path, sizeof header_path, "%s/include/cuda_fp16.h", cuda_home());
    if (access(header_path, R_OK) != 0)
        return fail("gpureduce compiles this kernel on first use with NVRTC (%s), which needs the CUDA toolkit's "
                    "headers, and %s is missing: set CUDA_HOME to the toolkit, or fill the kernel cache where the "
                    "toolkit is: python -m gpureduce warm", g_nvrtc.path, header_path);
    char storage[N_OPTIONS][600];
    const char *options[N_OPTIONS + 1];
    int n_options = 0;
    if (with_pch) options[n_options++] = "-pch"; /* NVRTC wants its PCH options first */
    n_options += nvrtc_options(arch, storage, options + n_options);
    nvrtcProgram prog = NULL;
    nvrtcResult r = g_nvrtc.create(&prog, gr_jit_program_sources[program], gr_jit_program_names[program],
                                   GR_JIT_HEADER_COUNT, gr_jit_header_texts, gr_jit_header_names);
    if (r == NVRTC_SUCCESS) r = g_nvrtc.add_name(prog, name);
    if (r == NVRTC_SUCCESS) r = g_nvrtc.compile(prog, n_options, options);
    if (r != NVRTC_SUCCESS) {
        size_t log_size = 0;
        char log[2048] = "";
        if (prog && g_nvrtc.log_size(prog, &log_size) == NVRTC_SUCCESS && log_size > 0) {
            char *full = malloc(log_size);
            if (full && g_nvrtc.log(prog, full) == NVRTC_SUCCESS) snprintf(log, sizeof log, "%s", full);
            free(full);
        }
        if (prog) g_nvrtc.destroy(&prog);
        return fail("NVRTC (%s) could not compile %s for sm_%d: %s\n%s", g_nvrtc.path, name, arch,
                    g_nvrtc.error_string(r), log);
    }
    const char *lowered = NULL;
    size_t cubin_size = 0;
    r = g_nvrtc.lowered(prog, name, &lowered);
    if (r == NVRTC_SUCCESS) r = g_nvrtc.cubin_size(prog, &cubin_size);
    const size_t head = strlen(CACHE_MAGIC) + (lowered ? strlen(lowered) : 0) + 1;
    if (r == NVRTC_SUCCESS && (e->data = malloc(head + cubin_size)) != NULL) {
        snprintf(e->data, head + 1, "%s%s\n", CACHE_MAGIC, lowered);
        r = g_nvrtc.cubin(prog, e->data + head);
        e->size = head + cubin_size;
    }
    g_nvrtc.destroy(&prog);
    if (r != NVRTC_SUCCESS || !e->data || !entry_parse(e)) {
        entry_free(e);
        return fail("NVRTC (%s) compiled %s for sm_%d but gave no cubin: %s", g_nvrtc.path, name, arch,
                    g_nvrtc.error_string(r));
    }
    return GR_OK;
}

/* The entry of (program, name, arch): from the disk cache, else compiled (with_pch: see nvrtc_options) and kept
 * there.  *compiled says which. */
static gr_status
obtain(gr_jit_program program, const char *name, int arch, int with_pch, cache_entry *e, int *compiled, char *path,
       size_t size)
{
    const char *dir = cache_dir();
    path[0] = '\0';
    if (*dir) {
        cache_path(path, size, dir, kernel_key(program, name, arch));
        if (entry_read(path, e)) {
            *compiled = 0;
            return GR_OK;
        }
    }
    const gr_status st = compile(program, name, arch, with_pch, e);
    if (st != GR_OK) return st;
    *compiled = 1;
    if (*path) entry_write(path, e);
    return GR_OK;
}

/* ---------------------------------------------------------------- the process's table */

typedef struct {
    gr_jit_program program;
    int arch;
    uint64_t name_hash; /* compared before the name: names share long prefixes, and a call looks its kernel up */
    char *name;
    void *image;  /* the cubin, aligned as malloc aligns, kept while the library may load it into a context */
    cudaLibrary_t library;
    cudaKernel_t kernel;
} loaded_kernel;

static loaded_kernel *g_loaded;
static size_t g_loaded_count, g_loaded_capacity;
static struct {
    unsigned long long compiled, read_from_disk, found_in_process;
    double compile_seconds;
} g_stats;

static double
now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static gr_status
current_arch(int *arch, int *cuda_error)
{
    int device = 0, major = 0, minor = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
    if (err != cudaSuccess) {
        *cuda_error = (int)err;
        return GR_ERR_CUDA;
    }
    *arch = major * 10 + minor;
    return GR_OK;
}

/* Loads the entry's cubin into `k` (its image copied to memory of its own, aligned as malloc aligns). */
static cudaError_t
load(loaded_kernel *k, const cache_entry *e)
{
    if (k->library) (void)cudaLibraryUnload(k->library);
    free(k->image);
    k->library = NULL;
    k->kernel = NULL;
    k->image = malloc(e->cubin_size);
    if (!k->image) return cudaErrorMemoryAllocation;
    memcpy(k->image, e->cubin, e->cubin_size);
    cudaError_t err = cudaLibraryLoadData(&k->library, k->image, NULL, NULL, 0, NULL, NULL, 0);
    if (err == cudaSuccess) err = cudaLibraryGetKernel(&k->kernel, k->library, e->name);
    return err;
}

gr_status
gr_jit_kernel(gr_jit_program program, const char *name, void **kernel, int *cuda_error)
{
    *kernel = NULL;
    t_error[0] = '\0';
    if (program < 0 || program >= GR_JIT_PROGRAM_COUNT || !name) return GR_ERR_INVALID_ARGUMENT;
    int arch = 0;
    gr_status st = current_arch(&arch, cuda_error);
    if (st != GR_OK) return st;
    key128 h = {14695981039346656037ull, 0};
    hash_text(&h, name);
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; i < g_loaded_count; i++) {
        const loaded_kernel *k = &g_loaded[i];
        if (k->name_hash == h.a && k->program == program && k->arch == arch && strcmp(k->name, name) == 0) {
            *kernel = (void *)k->kernel;
            g_stats.found_in_process++;
            pthread_mutex_unlock(&g_lock);
            return GR_OK;
        }
    }
    cache_entry e;
    char path[1100];
    int compiled = 0;
    const double t0 = now_seconds();
    st = obtain(program, name, arch, 0, &e, &compiled, path, sizeof path);
    if (st == GR_OK) {
        if (compiled) {
            g_stats.compiled++;
            g_stats.compile_seconds += now_seconds() - t0;
        }
        else g_stats.read_from_disk++;
        loaded_kernel k = {program, arch, h.a, strdup(name), NULL, NULL, NULL};
        cudaError_t err = k.name ? load(&k, &e) : cudaErrorMemoryAllocation;
        if (err != cudaSuccess && k.name && !compiled) { /* a cache file the driver refuses: compile it again */
            (void)cudaGetLastError();
            entry_free(&e);
            st = compile(program, name, arch, 0, &e);
            if (st == GR_OK) {
                g_stats.compiled++;
                if (*path) entry_write(path, &e);
                err = load(&k, &e);
            }
        }
        if (st == GR_OK && err == cudaSuccess && g_loaded_count == g_loaded_capacity) {
            const size_t capacity = g_loaded_capacity ? 2 * g_loaded_capacity : 64;
            loaded_kernel *grown = realloc(g_loaded, capacity * sizeof *grown);
            if (grown) {
                g_loaded = grown;
                g_loaded_capacity = capacity;
            }
            else err = cudaErrorMemoryAllocation;
        }
        if (st == GR_OK && err == cudaSuccess) {
            g_loaded[g_loaded_count++] = k;
            *kernel = (void *)k.kernel;
        }
        else {
            if (k.library) (void)cudaLibraryUnload(k.library);
            free(k.name);
            free(k.image);
            if (st == GR_OK) {
                *cuda_error = (int)err;
                st = GR_ERR_CUDA;
            }
        }
        entry_free(&e);
    }
    pthread_mutex_unlock(&g_lock);
    return st;
}

/* ---------------------------------------------------------------- the Python face */

/* jit_compile(program, name, arch, with_pch=False) -> (path, compiled): the kernel's cubin in the disk cache,
 * compiled there if it was not (no GPU needed): what `python -m gpureduce warm` runs for each kernel. */
PyObject *
gr_py_jit_compile(PyObject *module, PyObject *args)
{
    int program = 0, arch = 0, with_pch = 0;
    const char *name = NULL;
    if (!PyArg_ParseTuple(args, "isi|p:jit_compile", &program, &name, &arch, &with_pch)) return NULL;
    if (program < 0 || program >= GR_JIT_PROGRAM_COUNT) {
        PyErr_Format(PyExc_ValueError, "jit_compile: no program %d (0 to %d)", program, GR_JIT_PROGRAM_COUNT - 1);
        return NULL;
    }
    if (arch < 30 || arch > 1000) {
        PyErr_Format(PyExc_ValueError, "jit_compile: arch %d is not an architecture (75 for sm_75)", arch);
        return NULL;
    }
    cache_entry e;
    char path[1100];
    int compiled = 0;
    gr_status st;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&g_lock);
    t_error[0] = '\0';
    const double t0 = now_seconds();
    st = obtain((gr_jit_program)program, name, arch, with_pch, &e, &compiled, path, sizeof path);
    if (st == GR_OK) {
        entry_free(&e);
        if (compiled) {
            g_stats.compiled++;
            g_stats.compile_seconds += now_seconds() - t0;
        }
    }
    pthread_mutex_unlock(&g_lock);
    Py_END_ALLOW_THREADS
    if (st != GR_OK) { /* only NVRTC and the cache fail here (no device): the reason is this thread's */
        PyErr_Format(PyExc_RuntimeError, "jit_compile: %s", t_error);
        return NULL;
    }
    return Py_BuildValue("(sO)", path, compiled ? Py_True : Py_False);
}

/* jit_info() -> dict: where the cache and NVRTC are, what this process compiled, read and reused. */
PyObject *
gr_py_jit_info(PyObject *module, PyObject *unused)
{
    int major = 0, minor = 0;
    pthread_mutex_lock(&g_lock);
    const int found = load_nvrtc();
    if (found) (void)g_nvrtc.version(&major, &minor);
    PyObject *info = Py_BuildValue(
        "{s:s, s:s, s:O, s:s, s:n, s:K, s:K, s:K, s:d}", "cache_dir", cache_dir(), "nvrtc", g_nvrtc.path,
        "nvrtc_found", found ? Py_True : Py_False, "cuda_home", cuda_home(), "kernels_loaded",
        (Py_ssize_t)g_loaded_count, "compiled", g_stats.compiled, "read_from_disk", g_stats.read_from_disk,
        "found_in_process", g_stats.found_in_process, "compile_seconds", g_stats.compile_seconds);
    pthread_mutex_unlock(&g_lock);
    PyObject *version = found ? PyUnicode_FromFormat("%d.%d", major, minor) : Py_NewRef(Py_None);
    if (info && (!version || PyDict_SetItemString(info, "nvrtc_version", version) < 0)) Py_CLEAR(info);
    Py_XDECREF(version);
    return info;
}

/* jit_kernels() -> tuple of (program, name expression) of every kernel compiled on first use: `warm`'s list. */
static int
append_kernel(void *context, gr_jit_program program, const char *name)
{
    PyObject *item = Py_BuildValue("(is)", (int)program, name);
    const int failed = !item || PyList_Append((PyObject *)context, item) < 0;
    Py_XDECREF(item);
    return failed;
}

PyObject *
gr_py_jit_kernels(PyObject *module, PyObject *unused)
{
    PyObject *list = PyList_New(0);
    if (!list) return NULL;
    if (gr_jit_each_kernel(append_kernel, list)) {
        Py_DECREF(list);
        return NULL;
    }
    PyObject *t = PyList_AsTuple(list);
    Py_DECREF(list);
    return t;
}
