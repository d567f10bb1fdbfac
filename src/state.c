/* state.c -- the module state: a leaf every file of the extension may reach (errors need CudaError, the
 * intake and the results their types), so no file calls back into the module's root. */
#include "ext.h"

gr_module_state *
gr_state(PyObject *module)
{
    return (gr_module_state *)PyModule_GetState(module);
}
