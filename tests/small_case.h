// A small causal case for the harness's own tests: one batch row holding one
// document of `tokens` slots, every slot a query, head and value dims `dims`.
#pragma once

#include <cstdint>

#include "cases/case.h"

namespace attncheck::test {

inline Case OneDocumentCase(int tokens, int dims, uint64_t seed) {
  Case c;
  c.rows = {RowSpec{.documents = {tokens}}};
  c.query_len = tokens;
  c.head_dim = dims;
  c.value_dim = dims;
  c.seed = seed;
  return c;
}

}  // namespace attncheck::test
