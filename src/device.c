/* device.c -- what Python asks about the devices: how many, what the current one is, how much memory is free.
 *
 * device_count() answers 0 where there is no driver (import and the main job must work there); the others
 * need a device and raise gpureduce.CudaError saying why there is none (gr_current_device).
 */
#include "ext.h"

PyObject *
gr_py_device_count(PyObject *module, PyObject *unused)
{
    int count = 0; /* left untouched when there is no driver */
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        (void)cudaGetLastError();
        count = 0;
    }
    return PyLong_FromLong(count);
}

PyObject *
gr_py_device_properties(PyObject *module, PyObject *unused)
{
    const int device = gr_current_device(module);
    if (device < 0) return NULL;
    struct cudaDeviceProp prop;
    cudaError_t err;
    Py_BEGIN_ALLOW_THREADS /* the first query of a process may initialise the driver: milliseconds */
    err = cudaGetDeviceProperties(&prop, device);
    Py_END_ALLOW_THREADS
    if (err != cudaSuccess) return gr_raise_cuda(module, err, "cudaGetDeviceProperties");
    prop.name[sizeof(prop.name) - 1] = '\0';
    char pci_bus_id[32]; /* nvidia-smi's form: which GPU of the machine this is, whatever CUDA_VISIBLE_DEVICES says */
    snprintf(pci_bus_id, sizeof pci_bus_id, "%08x:%02x:%02x.0", (unsigned)prop.pciDomainID, (unsigned)prop.pciBusID,
             (unsigned)prop.pciDeviceID);
    return Py_BuildValue("{s:i,s:s,s:s,s:(ii),s:i,s:n,s:K}", "device", device, "name", prop.name, "pci_bus_id",
                         pci_bus_id, "compute_capability", prop.major, prop.minor, "sm_count",
                         prop.multiProcessorCount, "l2_bytes", (Py_ssize_t)prop.l2CacheSize, "memory_bytes",
                         (unsigned long long)prop.totalGlobalMem);
}

PyObject *
gr_py_memory_info(PyObject *module, PyObject *unused)
{
    if (gr_current_device(module) < 0) return NULL;
    size_t free_bytes = 0, total_bytes = 0;
    cudaError_t err;
    Py_BEGIN_ALLOW_THREADS /* creates the device's context if nothing has yet: tens of milliseconds */
    err = cudaMemGetInfo(&free_bytes, &total_bytes);
    Py_END_ALLOW_THREADS
    if (err != cudaSuccess) return gr_raise_cuda(module, err, "cudaMemGetInfo");
    return Py_BuildValue("(KK)", (unsigned long long)free_bytes, (unsigned long long)total_bytes);
}
