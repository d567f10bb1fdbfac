/* settings.c -- the environment variables gpureduce reads, parsed in one place.
 *
 *   GPUREDUCE_DEVICE_MEMORY_LIMIT    the most device memory a host operand may take when it is staged whole;
 *                                    host arrays that stream (stream_host.c) need only a few chunks of it
 *   GPUREDUCE_PINNED_RESULTS_LIMIT   the most pinned host memory the pool of results may hold
 *                                    (pinned_results.c; default 4 GiB or a quarter of the host's memory,
 *                                    the smaller; 0: none)
 *
 * Both are byte counts, read at their first use.
 */
#include "ext.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int
gr_env_bytes(const char *name, size_t *bytes)
{
    const char *text = getenv(name);
    if (!text || !*text) return 0;
    char *end = (char *)text; /* digits first: strtoull would skip blanks and take a minus sign */
    errno = 0;
    unsigned long long v = text[0] >= '0' && text[0] <= '9' ? strtoull(text, &end, 10) : 0;
    int shift = 0;
    if (end != text && *end && !end[1]) {
        const char *units = "KMGT", *u = strchr(units, end[0] & ~0x20);
        if (u && *u) {
            shift = 10 * (int)(u - units + 1);
            end++;
        }
    }
    if (end == text || *end || errno || text[0] == '-' || (shift && v > (~0ULL >> shift))) {
        PyErr_Format(PyExc_ValueError,
                     "environment variable %s='%s': expected a number of bytes such as 4294967296, 512M or 4G "
                     "(K, M, G, T are powers of 1024)", name, text);
        return -1;
    }
    *bytes = (size_t)(v << shift);
    return 1;
}

int
gr_check_device_memory_limit(PyObject *module, size_t bytes, const char *what)
{
    static int read = 0;
    static size_t limit = 0;
    static int has_limit = 0;
    if (!read) {
        const int got = gr_env_bytes("GPUREDUCE_DEVICE_MEMORY_LIMIT", &limit);
        if (got < 0) return -1;
        has_limit = got;
        read = 1;
    }
    if (!has_limit || bytes <= limit) return 0;
    char gib[32]; /* PyErr_Format has no %f */
    PyOS_snprintf(gib, sizeof(gib), "%.2f", bytes / 1073741824.0);
    PyErr_Format(gr_state(module)->OutOfMemoryError,
                 "%s needs %zu bytes (%s GiB) of device memory, more than GPUREDUCE_DEVICE_MEMORY_LIMIT=%zu: "
                 "host arrays stream through the device in chunks when they lie in rows (reduced along or across "
                 "C-ordered rows) and have no where= mask (mean, argmin, argmax and exclusive scans only along rows "
                 "that fit a chunk of 8 MiB); this call does not",
                 what, bytes, gib, limit);
    return -1;
}
