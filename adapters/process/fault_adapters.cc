// Fault-injection test adapters (process_adapter.h RegisterProcessAdapters):
// the eigen kernel, except that an attention call with an odd number of query
// rows misbehaves in one way — so a gate run mixes good cases with bad ones and
// must finish them all. They are registered as not correct: only a name or a
// `fault:*` pattern picks them. The ones that would take the harness down
// (segv, hang) and the one only a protocol can express (wrong-shape) always run
// isolated in a child process; `fault:nan` and `fault:throw` run in-process
// (`isolated:fault:throw` isolates that one too).
#include <chrono>
#include <csignal>
#include <limits>
#include <stdexcept>
#include <thread>

#include "adapters/eigen/eigen_adapter.h"
#include "adapters/process/process_adapter.h"

namespace attncheck::process {
namespace {

enum class Injected { kSegv, kHang, kNan, kThrow, kWrongShape };

class FaultAdapter final : public Adapter {
 public:
  FaultAdapter(Injected what, std::string name) : what_(what), name_(std::move(name)), eigen_(MakeEigenAdapter()) {}

  std::string name() const override { return name_; }
  std::string description() const override {
    return "test adapter: eigen that " + std::string(Behaviour()) + " on attention calls with odd Tq";
  }
  Capabilities capabilities() const override { return eigen_->capabilities(); }
  std::optional<std::string> unsupported(const Case& c) const override { return eigen_->unsupported(c); }

  void attention(const AttentionArgs& a) override {
    eigen_->attention(a);
    if (a.tq % 2 == 0) return;
    switch (what_) {
      case Injected::kSegv: std::raise(SIGSEGV); break;
      case Injected::kHang:
        for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
      case Injected::kNan:
        for (float& x : a.out) x = std::numeric_limits<float>::quiet_NaN();
        break;
      case Injected::kThrow: throw std::runtime_error("injected fault: kernel launch failed");
      case Injected::kWrongShape: break;  // the isolated server answers a wrong shape
    }
  }
  void rope(const RopeArgs& a) override { eigen_->rope(a); }
  std::unique_ptr<Session> open_session(const SessionArgs& a) override { return eigen_->open_session(a); }

 private:
  const char* Behaviour() const {
    switch (what_) {
      case Injected::kSegv: return "segfaults (SIGSEGV)";
      case Injected::kHang: return "hangs forever";
      case Injected::kNan: return "returns NaN";
      case Injected::kThrow: return "throws";
      case Injected::kWrongShape: return "answers an output of the wrong shape";
    }
    return "?";
  }

  Injected what_;
  std::string name_;
  std::unique_ptr<Adapter> eigen_;
};

}  // namespace

void RegisterProcessAdapters(Registrar& registry,
                             std::function<std::unique_ptr<Adapter>(std::string_view name)> make_inner) {
  registry.AddScheme({"exec:", "a backend process speaking the attncheck process protocol (adapters/process/PROTOCOL.md)",
                      AdapterKind::kScheme},
                     [](std::string_view command) { return MakeExecAdapter(command); });
  registry.AddScheme({"isolated:", "an in-tree adapter run in a child process with a per-call time limit",
                      AdapterKind::kScheme},
                     [make_inner = std::move(make_inner)](std::string_view name) {
                       return MakeIsolatedAdapter(make_inner(name), "isolated:" + std::string(name));
                     });
  struct Entry {
    Injected what;
    const char* name;
    bool isolated;
  };
  for (const Entry& e : {Entry{Injected::kSegv, "fault:segv", true}, Entry{Injected::kHang, "fault:hang", true},
                         Entry{Injected::kNan, "fault:nan", false}, Entry{Injected::kThrow, "fault:throw", false},
                         Entry{Injected::kWrongShape, "fault:wrong-shape", true}}) {
    AdapterFactory make = [e]() -> std::unique_ptr<Adapter> {
      auto adapter = std::make_unique<FaultAdapter>(e.what, e.name);
      if (!e.isolated) return adapter;
      ServeOptions options;
      options.wrong_output_shape = e.what == Injected::kWrongShape;
      return MakeIsolatedAdapter(std::move(adapter), e.name, options);
    };
    const std::unique_ptr<Adapter> probe = std::make_unique<FaultAdapter>(e.what, e.name);
    registry.Add({e.name, probe->description(), AdapterKind::kDefective}, std::move(make));
  }
}

}  // namespace attncheck::process
