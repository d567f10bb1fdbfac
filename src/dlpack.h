/* dlpack.h -- the DLPack exchange structures, written from the public specification
 * (https://dmlc.github.io/dlpack/latest/c_api.html): only what gpureduce exports.
 *
 * The layouts are an ABI shared with every consumer (NumPy, CuPy, PyTorch, JAX, ...): do not reorder.
 */
#ifndef GPUREDUCE_DLPACK_H
#define GPUREDUCE_DLPACK_H

#include <stdint.h>

/* The version gpureduce produces: 1.0 (1.1 only added narrow float types that gpureduce never exports). */
#define GR_DLPACK_MAJOR 1
#define GR_DLPACK_MINOR 0

/* Capsule names: a consumer renames the capsule to the used_ name when it takes ownership. */
#define GR_DLPACK_CAPSULE "dltensor"
#define GR_DLPACK_CAPSULE_USED "used_dltensor"
#define GR_DLPACK_VERSIONED_CAPSULE "dltensor_versioned"
#define GR_DLPACK_VERSIONED_CAPSULE_USED "used_dltensor_versioned"

typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

/* Device types: only those gpureduce meets (the spec numbers more). */
typedef enum {
    kDLCPU = 1,
    kDLCUDA = 2,
    kDLCUDAHost = 3,
    kDLCUDAManaged = 13,
} DLDeviceType;

typedef struct {
    DLDeviceType device_type;
    int32_t device_id;
} DLDevice;

typedef enum {
    kDLInt = 0,
    kDLUInt = 1,
    kDLFloat = 2,
    kDLOpaqueHandle = 3,
    kDLBfloat = 4,
    kDLComplex = 5,
    kDLBool = 6,
} DLDataTypeCode;

typedef struct {
    uint8_t code;   /* a DLDataTypeCode */
    uint8_t bits;   /* bits per lane */
    uint16_t lanes; /* 1 for scalars */
} DLDataType;

typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;     /* in elements; gpureduce always fills it in */
    uint64_t byte_offset;
} DLTensor;

/* Legacy (pre-1.0) managed tensor, capsule "dltensor". */
typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

#define DLPACK_FLAG_BITMASK_READ_ONLY (UINT64_C(1) << 0)
#define DLPACK_FLAG_BITMASK_IS_COPIED (UINT64_C(1) << 1)

/* Versioned managed tensor (1.0 and later), capsule "dltensor_versioned". */
typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

#endif /* GPUREDUCE_DLPACK_H */
