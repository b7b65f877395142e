// The plugin ABI's backward call (ABI 2.1, include/attncheck/adapter.h) with the
// example plugin's variants (examples/plugin): the plain-C backward holds every
// backward-* law in the gate, in-process and in a child (isolated:plugin:); the
// planted backward bug (the mask left out of dK/dV) fails one while the forward
// passes; the optional log-sum-exp slot is written when asked; ABI 1 and 2.0
// tables keep loading with no backward; a table declaring a backward it does not
// give, or ending inside the 2.1 fields, is refused.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "adapters/adapter_fault.h"
#include "adapters/registry.h"
#include "attncheck/adapter.h"
#include "cases/error.h"
#include "cases/law_needs.h"
#include "properties/laws.h"
#include "tests/cli_support.h"
#include "tests/example_plugins.h"

namespace attncheck {
namespace {

using test::PluginName;

class PluginBackwardCli : public test::ScratchDirTest {
 protected:
  // The gate's --json summary of `adapter` over `laws` (one --law each).
  nlohmann::json Gate(const std::string& adapter, const std::string& laws, int cases, int seed, int expect_code,
                      const std::string& extra = "") {
    const test::CliRun run = test::RunAttncheck(dir_, dir_,
                                                "gate --adapter " + test::Quoted(adapter) + " " + laws + " --cases " +
                                                    std::to_string(cases) + " --seed " + std::to_string(seed) +
                                                    " --json s.json --quiet " + extra);
    EXPECT_EQ(run.code, expect_code) << adapter << "\n" << run.out << run.err;
    return nlohmann::json::parse(test::ReadText(dir_ / "s.json"));
  }
};

// Every backward-* law at 200 cases: no fail, error or hazard, and a quarter of the cases
// checked at least (a skip is a case the law or the layout has nothing for, never the
// backward missing: the descriptor's padded forms cannot express the left-padded query
// rows backward-masked-rows draws, about 6 in 10 of its cases). A pair whose law the
// adapter cannot take at all (the padded descriptor cannot express packed documents:
// backward-packed-isolation) checks nothing and says why; it is not counted.
void ExpectEveryBackwardLawHolds(const nlohmann::json& summary, int cases) {
  int laws = 0;
  for (const nlohmann::json& r : summary.at("results")) {
    const std::string law = r.at("law");
    ASSERT_EQ(law.rfind("backward-", 0), 0u) << law;
    ++laws;
    EXPECT_EQ(r.at("failed"), 0) << r.dump();
    EXPECT_EQ(r.at("errors"), 0) << r.dump();
    EXPECT_EQ(r.at("hazards"), 0) << r.dump();
    if (r.value("nothing_checked", false) && law == "backward-packed-isolation") {
      const std::string reasons = r.at("skip_reasons").dump();
      EXPECT_NE(reasons.find("cannot express packed document"), std::string::npos) << r.dump();
      continue;
    }
    EXPECT_GE(r.at("passed").get<int>(), cases / 4) << r.dump();
    for (const auto& [reason, count] : r.at("skip_reasons").items()) {
      EXPECT_EQ(reason.find("no backward"), std::string::npos) << law << ": " << reason;
    }
    std::printf("%s × %s: %d passed, %d skipped\n", std::string(r.at("adapter")).c_str(), law.c_str(),
                r.at("passed").get<int>(), r.at("skipped").get<int>());
  }
  EXPECT_GE(laws, 4);
}

class PluginBackwardHolds : public PluginBackwardCli, public testing::WithParamInterface<const char*> {};

TEST_P(PluginBackwardHolds, InProcess) {
  ExpectEveryBackwardLawHolds(Gate(PluginName(GetParam()), "--law 'backward-*'", 200, 7, 0, "--in-process"), 200);
}

TEST_P(PluginBackwardHolds, InAChild) {
  ExpectEveryBackwardLawHolds(Gate("isolated:" + PluginName(GetParam()), "--law 'backward-*'", 200, 8, 0), 200);
}

// Dense masks and causal flags; the descriptor's padded batch (ALiBi and softcap from it).
INSTANTIATE_TEST_SUITE_P(ExamplePlugin, PluginBackwardHolds,
                         testing::Values("example_plugin", "example_plugin_descriptor"),
                         [](const testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param) == "example_plugin" ? "dense" : "descriptor";
                         });

// The varlen build's backward (ATTNCHECK_FORM_VARLEN_BACKWARD) on the packed axes: two
// sequences of two tokens packed give bitwise the gradients of the same buffers as a
// padded batch of two rows (the same arithmetic per row, only the layout differs).
TEST(PluginBackward, VarlenBackwardIsThePaddedBatchPacked) {
  const std::unique_ptr<Adapter> plugin = MakeAdapter(PluginName("example_plugin_varlen"));
  constexpr int kTokens = 4, kDim = 8;
  std::vector<float> q(kTokens * kDim), k(q.size()), v(q.size()), dout(q.size());
  for (size_t e = 0; e < q.size(); ++e) {
    q[e] = static_cast<float>(e % 5) * 0.25f - 0.5f;
    k[e] = static_cast<float>(e % 3) * 0.5f - 0.5f;
    v[e] = static_cast<float>(e % 7) * 0.125f;
    dout[e] = static_cast<float>(e % 4) - 1.5f;
  }
  const std::vector<int> positions = {0, 1, 0, 1};
  std::vector<float> dq(q.size(), NAN), dk(q.size(), NAN), dv(q.size(), NAN);
  VisibilityDescriptor varlen;
  varlen.batch = 1;
  varlen.tq = varlen.tk = kTokens;
  varlen.causal = CausalAlignment::kBottomRight;
  varlen.cu_seqlens_q = varlen.cu_seqlens_k = {0, 2, 4};
  BackwardArgs b;
  AttentionArgs& a = b.forward;
  a.spec.dtype = Dtype::kF32;
  a.batch = a.q_heads = a.kv_heads = 1;
  a.tq = a.tk = kTokens;
  a.head_dim = a.value_dim = kDim;
  a.q = q;
  a.k = k;
  a.v = v;
  a.query_positions = a.key_positions = positions;
  a.mask.convention = MaskConvention::kDescriptor;
  a.mask.descriptor = &varlen;
  a.scale = 1.0;
  b.dout = dout;
  b.dq = dq;
  b.dk = dk;
  b.dv = dv;
  ASSERT_TRUE(plugin->capabilities().descriptor_forms.varlen_backward);
  plugin->backward(b);
  const std::vector<float> packed_dq = dq, packed_dk = dk, packed_dv = dv;
  for (const std::vector<float>* g : {&dq, &dk, &dv}) {
    EXPECT_TRUE(std::all_of(g->begin(), g->end(), [](float x) { return std::isfinite(x); }));  // every element written
    EXPECT_TRUE(std::any_of(g->begin(), g->end(), [](float x) { return x != 0.0f; }));
  }
  // [1, 1, 4, D] is [2, 1, 2, D] in memory: the padded batch of the two sequences.
  VisibilityDescriptor padded;
  padded.batch = 2;
  padded.tq = padded.tk = kTokens / 2;
  padded.causal = CausalAlignment::kBottomRight;
  a.batch = 2;
  a.tq = a.tk = kTokens / 2;
  a.mask.descriptor = &padded;
  std::fill(dq.begin(), dq.end(), NAN);
  std::fill(dk.begin(), dk.end(), NAN);
  std::fill(dv.begin(), dv.end(), NAN);
  plugin->backward(b);
  EXPECT_EQ(dq, packed_dq);
  EXPECT_EQ(dk, packed_dk);
  EXPECT_EQ(dv, packed_dv);
}

// The optional log-sum-exp slot, called through the table directly (the harness does
// not ask for it yet): the example writes log Σ_j e^(s_ij) over each row's visible
// keys, -inf for a row with none (whose dq is 0).
TEST(PluginBackward, ExampleWritesTheLogSumExpWhenAsked) {
  void* library = dlopen((std::string(ATTNCHECK_EXAMPLE_PLUGIN_DIR) + "/libexample_plugin.so").c_str(), RTLD_NOW);
  ASSERT_NE(library, nullptr) << dlerror();
  const auto entry = reinterpret_cast<attncheck_adapter_entry_fn>(dlsym(library, ATTNCHECK_ADAPTER_ENTRY));
  ASSERT_NE(entry, nullptr);
  const attncheck_adapter_v1& t = *entry();
  constexpr int kTq = 3, kTk = 4, kDim = 4;
  const auto tensor = [](void* data, int32_t dtype, std::vector<int64_t> shape) {
    attncheck_tensor x{};
    x.data = data;
    x.dtype = dtype;
    x.rank = static_cast<int32_t>(shape.size());
    shape.resize(4, 1);
    int64_t stride = 1;
    for (int d = 3; d >= 0; --d) {
      x.shape[d] = shape[static_cast<size_t>(d)];
      x.strides[d] = stride;
      stride *= x.shape[d];
    }
    return x;
  };
  std::vector<float> q(kTq * kDim), k(kTk * kDim), v(kTk * kDim), dout(kTq * kDim);
  for (size_t e = 0; e < k.size(); ++e) {
    k[e] = static_cast<float>(e % 3) - 1.0f;
    v[e] = 0.125f * static_cast<float>(e);
    if (e >= q.size()) continue;
    q[e] = static_cast<float>(e % 5) * 0.5f - 1.0f;
    dout[e] = 1.0f - 0.25f * static_cast<float>(e);
  }
  // row 0 sees keys 0 and 1, row 1 every key, row 2 none
  std::vector<uint8_t> visible = {1, 1, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0};
  std::vector<int32_t> positions = {0, 1, 2, 3};
  std::vector<float> dq(q.size(), NAN), dk(k.size(), NAN), dv(v.size(), NAN), lse(kTq, NAN);
  attncheck_backward_args a{};
  attncheck_attention_args& f = a.forward;
  f.batch = f.q_heads = f.kv_heads = 1;
  f.tq = kTq;
  f.tk = kTk;
  f.head_dim = f.value_dim = kDim;
  f.q = tensor(q.data(), ATTNCHECK_DTYPE_F32, {1, 1, kTq, kDim});
  f.k = tensor(k.data(), ATTNCHECK_DTYPE_F32, {1, 1, kTk, kDim});
  f.v = tensor(v.data(), ATTNCHECK_DTYPE_F32, {1, 1, kTk, kDim});
  f.query_positions = tensor(positions.data(), ATTNCHECK_DTYPE_I32, {1, kTq});
  f.key_positions = tensor(positions.data(), ATTNCHECK_DTYPE_I32, {1, kTk});
  f.mask_convention = ATTNCHECK_MASK_BOOL_VISIBLE;
  f.mask = tensor(visible.data(), ATTNCHECK_DTYPE_U8, {1, kTq, kTk});
  f.scale = 0.5;
  f.out = tensor(nullptr, ATTNCHECK_DTYPE_F32, {1, 1, kTq, kDim});
  a.dout = tensor(dout.data(), ATTNCHECK_DTYPE_F32, {1, 1, kTq, kDim});
  a.dq = tensor(dq.data(), ATTNCHECK_DTYPE_F32, {1, 1, kTq, kDim});
  a.dk = tensor(dk.data(), ATTNCHECK_DTYPE_F32, {1, 1, kTk, kDim});
  a.dv = tensor(dv.data(), ATTNCHECK_DTYPE_F32, {1, 1, kTk, kDim});
  a.lse = tensor(lse.data(), ATTNCHECK_DTYPE_F32, {1, 1, kTq});
  void* instance = t.create();
  ASSERT_EQ(t.backward(instance, &a), ATTNCHECK_OK) << t.last_error(instance);
  t.destroy(instance);
  for (int i = 0; i < 2; ++i) {
    double sum = 0.0;
    for (int j = 0; j < kTk; ++j) {
      if (!visible[static_cast<size_t>(i * kTk + j)]) continue;
      double dot = 0.0;
      for (int d = 0; d < kDim; ++d) dot += q[static_cast<size_t>(i * kDim + d)] * k[static_cast<size_t>(j * kDim + d)];
      sum += std::exp(0.5 * dot);
    }
    EXPECT_NEAR(lse[static_cast<size_t>(i)], std::log(sum), 1e-5) << "row " << i;
  }
  EXPECT_EQ(lse[2], -INFINITY);
  for (int d = 0; d < kDim; ++d) EXPECT_EQ(dq[static_cast<size_t>(2 * kDim + d)], 0.0f);
  dlclose(library);
}

// The planted bug: blocked keys get gradient. The forward is untouched (reference-
// agreement passes); backward-non-interference and backward-agreement fail.
TEST_F(PluginBackwardCli, BackwardIgnoringTheMaskForDkDvFails) {
  const std::string planted = PluginName("example_plugin_backward_mask");
  const nlohmann::json forward = Gate(planted, "--law reference-agreement", 60, 1, 0, "--in-process");
  EXPECT_GT(forward.at("results").at(0).at("passed").get<int>(), 0);
  const nlohmann::json backward =
      Gate(planted, "--law backward-non-interference --law backward-agreement", 200, 1, 1, "--in-process");
  for (const nlohmann::json& r : backward.at("results")) EXPECT_GT(r.at("failed").get<int>(), 0) << r.dump();
}

// A table built against the ABI 2.0 header: struct_size ends before the 2.1 fields;
// it loads, runs its forward, and has no backward (the backward-* laws draw nothing).
TEST(PluginBackward, Abi20TableLoadsWithoutBackward) {
  const test::TableVersion v2_0 = test::ExampleTableVersion("example_plugin_abi_v2_0");
  EXPECT_EQ(v2_0.abi_version, 2u);
  EXPECT_EQ(v2_0.struct_size, ATTNCHECK_ADAPTER_V2_0_SIZE);
  EXPECT_EQ(test::ExampleTableVersion("example_plugin").struct_size, sizeof(attncheck_adapter_v1));
  for (const char* variant : {"example_plugin_abi_v2_0", "example_plugin_abi_v1"}) {
    const std::unique_ptr<Adapter> old = MakeAdapter(PluginName(variant));
    const Capabilities caps = old->capabilities();
    EXPECT_FALSE(caps.has_backward) << variant;
    EXPECT_TRUE(caps.has_session) << variant;  // the rest of the table is read as before
    std::string why;
    EXPECT_FALSE(NarrowToNeeds(caps, FindLaw("backward-agreement")->needs, &why)) << variant;
    EXPECT_EQ(why, "adapter has no backward pass") << variant;
  }
  EXPECT_TRUE(MakeAdapter(PluginName("example_plugin"))->capabilities().has_backward);
}

// A table built against the ABI 2.1 header ends before backward_saved: it loads with
// its backward and never gets the saved inputs; the 2.2 example declares them.
TEST(PluginBackward, Abi21TableLoadsWithoutBackwardSaved) {
  const test::TableVersion v2_1 = test::ExampleTableVersion("example_plugin_abi_v2_1");
  EXPECT_EQ(v2_1.abi_version, 2u);
  EXPECT_EQ(v2_1.struct_size, ATTNCHECK_ADAPTER_V2_1_SIZE);
  EXPECT_GE(sizeof(attncheck_adapter_v1), ATTNCHECK_ADAPTER_V2_2_SIZE);
  const Capabilities old = MakeAdapter(PluginName("example_plugin_abi_v2_1"))->capabilities();
  EXPECT_TRUE(old.has_backward);
  EXPECT_TRUE(old.backward_lse);
  EXPECT_FALSE(old.backward_saved);
  EXPECT_TRUE(MakeAdapter(PluginName("example_plugin"))->capabilities().backward_saved);
}

// The 2.1 build (recomputing O) and the 2.2 build (δ from the saved out) both pass
// backward-agreement through the plugin conversion.
TEST_F(PluginBackwardCli, SavedAndRecomputedBackwardsBothAgree) {
  for (const char* variant : {"example_plugin", "example_plugin_abi_v2_1"}) {
    const nlohmann::json summary = Gate(PluginName(variant), "--law backward-agreement", 60, 1, 0, "--in-process");
    EXPECT_GT(summary.at("results").at(0).at("passed").get<int>(), 30) << variant;
  }
}

TEST_F(PluginBackwardCli, Abi20TablePassesItsForward) {
  const nlohmann::json summary = Gate(PluginName("example_plugin_abi_v2_0"), "--law reference-agreement", 40, 2, 0);
  EXPECT_GT(summary.at("results").at(0).at("passed").get<int>(), 0);
}

// has_backward 1 with no function, and a struct_size that covers has_backward but not
// backward(): refused on load, the field named.
TEST(PluginBackward, TablesPromisingAMissingBackwardAreRefused) {
  const auto refusal = [](const std::string& variant) -> InputError {
    try {
      MakeAdapter(PluginName(variant));
    } catch (const InputError& e) {
      return e;
    }
    ADD_FAILURE() << variant << " loaded";
    return InputError("", "", "");
  };
  const InputError missing = refusal("example_plugin_no_backward");
  EXPECT_EQ(missing.field(), "backward");
  EXPECT_EQ(missing.reason(), "missing while has_backward is 1");
  const InputError size = refusal("example_plugin_bad_backward_size");
  EXPECT_EQ(size.field(), "struct_size");
  EXPECT_NE(size.reason().find("ends inside the ABI 2.1 fields"), std::string::npos) << size.reason();
}

TEST_F(PluginBackwardCli, MissingBackwardIsOneLineExit2) {
  const test::CliRun run = test::RunAttncheck(
      dir_, dir_, "gate --adapter " + test::Quoted(PluginName("example_plugin_no_backward")) + " --cases 1 --quiet");
  EXPECT_EQ(run.code, 2) << run.out << run.err;
  EXPECT_EQ(test::Lines(run.err, true).size(), 1u) << run.err;
  EXPECT_NE(run.err.find("backward: missing while has_backward is 1"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace attncheck
