// The `reference` adapter: the double-precision reference model behind the
// Adapter interface. It owns every stage (positional encoding, score bias,
// attention, a cached-decode session that recomputes from stored keys), accepts
// every dtype and mask convention, and is the baseline every law must pass.
#pragma once

#include <memory>

#include "adapters/adapter.h"

namespace attncheck {

std::unique_ptr<Adapter> MakeReferenceAdapter();

}  // namespace attncheck
