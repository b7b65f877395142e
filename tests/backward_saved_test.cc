// The forward's saved output and log-sum-exp as inputs of the backward call
// (Capabilities::backward_saved, BackwardArgs::saved_out / saved_lse): what the harness
// hands equals the reference forward's, nothing is handed to an adapter not declaring
// them, the tiled kernels read them and pass the backward laws, a backward misreading
// them fails a law, and the process protocol carries them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>

#include "adapters/eigen/eigen_adapter.h"
#include "adapters/harness.h"
#include "adapters/registry.h"
#include "tests/backward_cases.h"
#include "tests/law_stream.h"
#include "cases/decode.h"
#include "cases/random_source.h"
#include "properties/law_support.h"
#include "properties/laws.h"
#include "reference/attention.h"
#include "reference/backward.h"
#include "reference/data.h"

namespace attncheck {
namespace {

// An adapter's backward with what each call was handed copied out (and, where `slips`
// are given, EigenBackward with them in place of the adapter's own backward).
class Recorder final : public Adapter {
 public:
  Recorder(const std::string& inner, bool saved, std::optional<BackwardSlips> slips = std::nullopt)
      : inner_(MakeAdapter(inner)), saved_(saved), slips_(slips) {}
  std::string name() const override { return inner_->name() + "-recorded"; }
  std::string description() const override { return "records the saved inputs (test)"; }
  Capabilities capabilities() const override {
    Capabilities caps = inner_->capabilities();
    caps.backward_saved = saved_;
    return caps;
  }
  std::optional<std::string> unsupported(const Case& c) const override { return inner_->unsupported(c); }
  void attention(const AttentionArgs& args) override { inner_->attention(args); }
  void backward(const BackwardArgs& args) override {
    ++calls;
    saved_out.assign(args.saved_out.begin(), args.saved_out.end());
    saved_lse.assign(args.saved_lse.begin(), args.saved_lse.end());
    if (slips_) return EigenBackward(args, *slips_);
    inner_->backward(args);
  }

  int calls = 0;
  std::vector<float> saved_out, saved_lse;  // the last call's

 private:
  std::unique_ptr<Adapter> inner_;
  bool saved_;
  std::optional<BackwardSlips> slips_;
};

// saved_out is the reference forward's output rounded to the dtype, element for
// element; saved_lse its log-sum-exp in f32, +inf on a row with no visible key.
TEST(BackwardSaved, HandedInputsAreTheReferenceForward) {
  for (const char* name : {"tiled-f32", "tiled-f16", "tiled-bf16"}) {
    Recorder recorder(name, /*saved=*/true);
    int compared = 0, empty_rows = 0;
    const int ran = ForBackwardCases(recorder, "backward-agreement", 1, 80, [&](const Case& c,
                                                                            const reference::Scenario& s, uint64_t i) {
      const TensorD dout = reference::UpstreamGradient(s, i, reference::UpstreamProfile::kUniform);
      recorder.calls = 0;
      const AdapterRun run = RunBackward(recorder, s, dout);
      ASSERT_TRUE(run.ok()) << run.fault;
      if (recorder.calls != 1) return;  // head groups: each call holds a slice (checked by the laws below)
      const reference::AttentionResult want = reference::Attention<double>(s);
      ASSERT_EQ(recorder.saved_out.size(), want.out.size()) << name;
      ASSERT_EQ(recorder.saved_lse.size(), want.lse.size()) << name;
      for (size_t e = 0; e < want.out.size(); ++e) {
        ASSERT_EQ(recorder.saved_out[e], static_cast<float>(reference::RoundTo(c.dtype, want.out.data[e])))
            << name << " out element " << e << "\n" << ToLine(c);
      }
      for (size_t row = 0; row < want.lse.size(); ++row) {
        if (std::isfinite(want.lse[row])) {
          ASSERT_EQ(recorder.saved_lse[row], static_cast<float>(want.lse[row])) << name << " lse row " << row;
        } else {
          ++empty_rows;
          ASSERT_EQ(recorder.saved_lse[row], std::numeric_limits<float>::infinity()) << name << " empty row " << row;
        }
      }
      ++compared;
    });
    EXPECT_GT(compared, ran / 2) << name;
    EXPECT_GT(empty_rows, 0) << name << ": rows with no visible key must be among the cases";
  }
}

// An adapter not declaring backward_saved gets empty spans.
TEST(BackwardSaved, AbsentWithoutTheDeclaration) {
  Recorder recorder("eigen", /*saved=*/false);
  const int ran = ForBackwardCases(recorder, "backward-agreement", 1, 20, [&](const Case&, const reference::Scenario& s,
                                                                           uint64_t i) {
    const TensorD dout = reference::UpstreamGradient(s, i, reference::UpstreamProfile::kUniform);
    const AdapterRun run = RunBackward(recorder, s, dout);
    ASSERT_TRUE(run.ok()) << run.fault;
    EXPECT_TRUE(recorder.saved_out.empty());
    EXPECT_TRUE(recorder.saved_lse.empty());
  });
  EXPECT_GT(ran, 10);
  EXPECT_FALSE(MakeAdapter("eigen")->capabilities().backward_saved);  // eigen keeps recomputing
  EXPECT_TRUE(MakeAdapter("tiled-f32")->capabilities().backward_saved);
}

// The saved inputs are guarded as dout is: a backward that writes into the saved lse
// (or past it) breaks the buffer contract, and the run's fault names the tensor.
class WritesSavedLse final : public Adapter {
 public:
  std::string name() const override { return "writes-saved-lse"; }
  std::string description() const override { return "writes into its saved lse (test)"; }
  Capabilities capabilities() const override {
    Capabilities caps = inner_->capabilities();
    caps.backward_saved = true;
    return caps;
  }
  void attention(const AttentionArgs& args) override { inner_->attention(args); }
  void backward(const BackwardArgs& args) override {
    inner_->backward(args);
    const_cast<float&>(args.saved_lse[0]) = 0.0f;  // the defect: an input written
  }

 private:
  std::unique_ptr<Adapter> inner_ = MakeAdapter("eigen");
};

TEST(BackwardSaved, WritingASavedInputIsAFault) {
  WritesSavedLse adapter;
  const int ran = ForBackwardCases(adapter, "backward-agreement", 1, 5, [&](const Case&, const reference::Scenario& s,
                                                                         uint64_t i) {
    const TensorD dout = reference::UpstreamGradient(s, i, reference::UpstreamProfile::kUniform);
    const AdapterRun run = RunBackward(adapter, s, dout);
    EXPECT_FALSE(run.ok());
    EXPECT_NE(run.fault.find("saved_lse"), std::string::npos) << run.fault;
  });
  EXPECT_GT(ran, 0);
}

// The tiled backward reads what it is handed: the saved lse raised by 1 on every row
// scales P, so dV by e^-1 — its own forward would not notice.
TEST(BackwardSaved, TiledReadsTheSavedLse) {
  const std::unique_ptr<Adapter> tiled = MakeAdapter("tiled-f32");
  AttentionArgs a;
  a.spec.dtype = Dtype::kF32;
  a.batch = 1, a.q_heads = 1, a.kv_heads = 1, a.tq = 3, a.tk = 3, a.head_dim = 2, a.value_dim = 2;
  const std::vector<float> q = {0.5f, -1.0f, 0.25f, 0.75f, -0.5f, 1.0f}, k = {1.0f, 0.0f, 0.0f, 1.0f, 0.5f, 0.5f};
  const std::vector<float> v = {1.0f, 2.0f, -1.0f, 0.5f, 0.25f, -2.0f}, dout = {1.0f, -1.0f, 0.5f, 2.0f, -0.75f, 1.5f};
  a.q = q, a.k = k, a.v = v;
  a.mask.convention = MaskConvention::kCausalTopLeft;
  a.scale = 0.7;
  const auto run = [&](std::span<const float> saved_out, std::span<const float> saved_lse) {
    std::vector<float> dq(6), dk(6), dv(6);
    BackwardArgs b;
    b.forward = a;
    b.dout = dout;
    b.dq = dq, b.dk = dk, b.dv = dv;
    b.saved_out = saved_out;
    b.saved_lse = saved_lse;
    tiled->backward(b);
    return dv;
  };
  std::vector<float> out(6), lse(3);
  AttentionArgs forward = a;
  forward.out = out;
  tiled->attention(forward);
  for (int i = 0; i < 3; ++i) {  // the causal rows' log-sum-exp, by hand
    double sum = 0.0;
    for (int j = 0; j <= i; ++j) sum += std::exp(0.7 * (q[2 * i] * k[2 * j] + q[2 * i + 1] * k[2 * j + 1]));
    lse[i] = static_cast<float>(std::log(sum));
  }
  const std::vector<float> own = run({}, {}), given = run(out, lse);
  std::vector<float> raised = lse;
  for (float& x : raised) x += 1.0f;
  const std::vector<float> scaled = run(out, raised);
  for (size_t e = 0; e < own.size(); ++e) {
    EXPECT_NEAR(given[e], own[e], 1e-5);
    EXPECT_NEAR(scaled[e], own[e] * std::exp(-1.0f), 1e-5) << "element " << e;
  }
}

using test::RunStream;
using test::Tally;

// tiled-f32/f16/bf16 with the saved inputs pass agreement, non-interference and the
// masked rows (every call handed them: the recorder counts).
TEST(BackwardSaved, TiledPassesTheBackwardLawsWithSavedInputs) {
  for (const char* name : {"tiled-f32", "tiled-f16", "tiled-bf16"}) {
    for (const char* law_name : {"backward-agreement", "backward-non-interference", "backward-masked-rows"}) {
      Recorder recorder(name, /*saved=*/true);
      const Tally t = RunStream(recorder, *FindLaw(law_name), 200);
      std::printf("%s × %s (saved inputs): %d passed, %d skipped, %d failed, %d hazards\n", name, law_name, t.passed,
                  t.skipped, t.failed, t.hazards);
      EXPECT_EQ(t.failed, 0) << name << " × " << law_name;
      EXPECT_EQ(t.hazards, 0) << name << " × " << law_name;
      EXPECT_GE(t.passed, 100) << name << " × " << law_name;
      EXPECT_FALSE(recorder.saved_lse.empty()) << name << " × " << law_name;
    }
  }
}

// Planted defects given a correct saved lse: P from the saved lse of the next row
// (mutant:bwd-lse-other-row) fails backward-agreement; dK and dV over every key, the
// mask ignored, fails backward-non-interference.
TEST(BackwardSaved, ABackwardMisreadingTheSavedInputsFails) {
  const std::unique_ptr<Adapter> other_row = MakeAdapter("mutant:bwd-lse-other-row");
  ASSERT_TRUE(other_row->capabilities().backward_saved);
  const Tally shifted = RunStream(*other_row, *FindLaw("backward-agreement"), 60);
  EXPECT_GT(shifted.failed, 10);
  Recorder unmasked("eigen", /*saved=*/true, [] { BackwardSlips slips; slips.dkdv_unmasked = true; return slips; }());
  const Tally leaked = RunStream(unmasked, *FindLaw("backward-non-interference"), 60);
  EXPECT_GT(leaked.failed, 10);
  EXPECT_FALSE(unmasked.saved_lse.empty());
  Recorder right("eigen", /*saved=*/true, BackwardSlips{});  // the same backward without a defect passes
  const Tally fine = RunStream(right, *FindLaw("backward-agreement"), 60);
  EXPECT_EQ(fine.failed, 0);
  EXPECT_GT(fine.passed, 30);
}

// isolated:tiled-f32 (the C++ serve over the process protocol) is handed the saved
// inputs and gives the in-process gradients bit for bit; had serve dropped them, the
// wrapped kernel would fall back to its own forward's lse and O.
TEST(BackwardSaved, IsolatedRoundTripCarriesThem) {
  const std::unique_ptr<Adapter> isolated = MakeAdapter("isolated:tiled-f32");
  ASSERT_TRUE(isolated->capabilities().backward_saved);
  const std::unique_ptr<Adapter> local = MakeAdapter("tiled-f32");
  Recorder own_forward("tiled-f32", /*saved=*/false);
  int differs_from_own = 0;
  const int ran = ForBackwardCases(*local, "backward-agreement", 1, 40, [&](const Case& c, const reference::Scenario& s,
                                                                         uint64_t i) {
    const TensorD dout = reference::UpstreamGradient(s, i, reference::UpstreamProfile::kUniform);
    const AdapterRun here = RunBackward(*local, s, dout), there = RunBackward(*isolated, s, dout);
    ASSERT_TRUE(there.ok()) << there.fault;
    EXPECT_EQ(here.dq, there.dq) << ToLine(c);
    EXPECT_EQ(here.dk, there.dk) << ToLine(c);
    EXPECT_EQ(here.dv, there.dv) << ToLine(c);
    EXPECT_EQ(here.lse, there.lse) << ToLine(c);
    const AdapterRun own = RunBackward(own_forward, s, dout);
    differs_from_own += own.dq != there.dq || own.dk != there.dk || own.dv != there.dv;
  });
  EXPECT_GT(ran, 20);
  EXPECT_GT(differs_from_own, ran / 4) << "the saved inputs must make a difference for this check to mean anything";
}

// exec: a numpy backend whose backward computes P from the saved lse and δ from the
// saved out (the kit hands them as out=, lse=) passes backward-agreement; the same
// backend reading the next row's saved lse fails it.
TEST(BackwardSaved, ExecKitBackendUsesThem) {
  if (!test::HaveNumpy()) GTEST_SKIP() << "/usr/bin/python3 cannot import numpy (Debian: apt-get install python3-numpy)";
  const std::string backend =
      "exec:/usr/bin/python3 " ATTNCHECK_SOURCE_DIR "/tests/data/process/saved_backward_backend.py";
  const std::unique_ptr<Adapter> right = MakeAdapter(backend);
  ASSERT_TRUE(right->capabilities().backward_saved);
  const Tally good = RunStream(*right, *FindLaw("backward-agreement"), 40);
  EXPECT_EQ(good.failed, 0);
  EXPECT_GT(good.passed, 20);
  const std::unique_ptr<Adapter> shifted = MakeAdapter(backend + " --defect-lse-row");
  const Tally bad = RunStream(*shifted, *FindLaw("backward-agreement"), 40);
  EXPECT_GT(bad.failed, 5);
}

}  // namespace
}  // namespace attncheck
