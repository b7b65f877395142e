// The rope-stage driver (harness.h RunRope): adapter.rope on x at positions, guarded.
#include "adapters/harness_internal.h"

namespace attncheck {

using harness::AdapterTimer;
using harness::Finish;
using harness::ToDouble;
using harness::ToFloat;

AdapterRun RunRope(Adapter& adapter, const Case& c, const TensorD& x, std::span<const int> positions,
                   int current_length) {
  AdapterRun run;
  const int batch = x.shape[0], heads = x.shape[1], tokens = x.shape[2], dim = x.shape[3];
  run.out = TensorD(batch, heads, tokens, dim);
  if (!adapter.capabilities().has_rope_stage) {
    run.fault = "adapter has no rope stage";
    return run;
  }
  const TensorF x_float = ToFloat(x, c.dtype);
  GuardedCall call;
  RopeArgs args;
  args.spec = SpecOf(c);
  args.batch = batch;
  args.heads = heads;
  args.tokens = tokens;
  args.head_dim = dim;
  args.x = call.Input("x", std::span<const float>(x_float.data));
  args.positions = call.Input("positions", positions);
  args.current_length = current_length;
  args.out = call.Output("out", x_float.size());
  CallFaults faults;
  call.Run([&] { const AdapterTimer timer; adapter.rope(args); }, faults);
  run.out = ToDouble(args.out, batch, heads, tokens, dim);
  Finish(run, faults);
  return run;
}

}  // namespace attncheck
