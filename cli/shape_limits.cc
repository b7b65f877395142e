// The --max-* shape limit options and how they narrow an adapter's capabilities
// (cli/shape_limits.h).
#include "cli/shape_limits.h"

#include <algorithm>

#include "cli/commands.h"

namespace attncheck::cli {

void AddShapeLimitOptions(CLI::App& app, ShapeLimits& limits) {
  app.add_option("--max-batch", limits.max_batch, "Largest batch drawn (default: the adapter's limit)")
      ->check(IntIn(1, 1000000));
  app.add_option("--max-heads", limits.max_heads, "Most query heads drawn (default: the adapter's limit)")
      ->check(IntIn(1, 1000000));
  app.add_option("--max-tokens", limits.max_tokens, "Longest key length drawn (default: the adapter's limit)")
      ->check(IntIn(1, 1000000));
  app.add_option("--max-head-dim", limits.max_head_dim, "Largest head dim drawn (default: the adapter's limit)")
      ->check(IntIn(1, 1000000));
}

Capabilities Narrow(Capabilities caps, const ShapeLimits& limits) {
  if (limits.max_batch > 0) caps.max_batch = limits.max_batch;
  if (limits.max_heads > 0) {
    caps.max_heads = limits.max_heads;
    caps.many_heads = std::min(caps.many_heads, limits.max_heads);
  }
  if (limits.max_tokens > 0) caps.max_tokens = limits.max_tokens;
  if (limits.max_head_dim > 0) caps.max_head_dim = limits.max_head_dim;
  // A limit narrows the size tier too (a tier below its smallest shape draws none).
  SizeTier& tier = caps.size_tier;
  if (limits.max_heads > 0) tier.max_heads = std::min(tier.max_heads, limits.max_heads);
  if (limits.max_tokens > 0) tier.max_tokens = std::min(tier.max_tokens, limits.max_tokens);
  if (limits.max_head_dim > 0) tier.max_head_dim = std::min(tier.max_head_dim, limits.max_head_dim);
  return caps;
}

}  // namespace attncheck::cli
