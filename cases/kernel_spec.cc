// The kernel's view of a case (kernel_spec.h): the fields a kernel is told, copied.
#include "cases/kernel_spec.h"

namespace attncheck {

KernelSpec SpecOf(const Case& c) {
  KernelSpec spec;
  spec.dtype = c.dtype;
  spec.softcap = c.softcap;
  spec.encoding = c.encoding;
  spec.q_heads = c.q_heads;
  spec.kv_heads = c.kv_heads;
  spec.head_dim = c.head_dim;
  spec.value_dim = c.value_dim;
  spec.weights_seed = c.seed;
  return spec;
}

}  // namespace attncheck
