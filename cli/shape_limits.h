// Shape limits from the command line (--max-batch, --max-heads, --max-tokens,
// --max-head-dim): they narrow the capabilities an adapter declares, so cases are
// decoded smaller than the adapter allows (gate, bench).
#pragma once

#include <CLI/CLI.hpp>

#include "cases/capabilities.h"

namespace attncheck::cli {

struct ShapeLimits {
  int max_batch = 0;  // 0 = the adapter's own limit
  int max_heads = 0;
  int max_tokens = 0;
  int max_head_dim = 0;
};

// Adds the four --max-* options to `app`, writing into `limits`.
void AddShapeLimitOptions(CLI::App& app, ShapeLimits& limits);

// `caps` with each limit given (> 0) in place of the adapter's own.
Capabilities Narrow(Capabilities caps, const ShapeLimits& limits);

}  // namespace attncheck::cli
