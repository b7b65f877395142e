// The visibility descriptor on the process protocol (adapters/process/
// descriptor_json.h): every descriptor reference::Describe builds — padded batch,
// varlen, paged, ALiBi — survives the JSON round trip, and malformed ones are
// protocol errors; the numpy backend in descriptor mode passes the gate and a
// copy that ignores the descriptor's causal flag fails it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "adapters/process/descriptor_json.h"
#include "adapters/process/protocol.h"
#include "cases/decode.h"
#include "cases/random_source.h"
#include "reference/descriptor.h"
#include "tests/cli_support.h"

namespace attncheck {
namespace {

TEST(ProcessDescriptor, RoundTripsEveryDescribedCase) {
  Capabilities caps;
  caps.masks = {MaskConvention::kDescriptor};
  caps.encodings = {EncodingKind::kNone, EncodingKind::kAlibi};
  caps.softcap = true;
  int round_trips = 0, varlen = 0, paged = 0;
  for (const DescriptorForms& forms : {reference::FlashAttentionForms(false), reference::FlashAttentionForms(true, 4)}) {
    for (uint64_t i = 0; i < 300; ++i) {
      RandomSource source(47, i);
      const Case c = Decode(source, caps);
      const std::optional<VisibilityDescriptor> d = reference::Describe(c, forms, nullptr);
      if (!d) continue;
      const nlohmann::json j = process::DescriptorToJson(*d);
      EXPECT_EQ(process::DescriptorFromJson(nlohmann::json::parse(j.dump()), d->batch, d->tq, d->tk), *d) << j.dump();
      ++round_trips;
      varlen += d->varlen();
      paged += d->paged.page_size > 0;
    }
  }
  EXPECT_GT(round_trips, 200);
  EXPECT_GT(varlen, 50);
  EXPECT_GT(paged, 50);
}

TEST(ProcessDescriptor, MalformedIsAProtocolError) {
  const nlohmann::json good = {{"causal", 2}, {"window_left", 3}, {"window_right", 0}, {"seqused_k", {5, 6}}};
  EXPECT_EQ(process::DescriptorFromJson(good, 2, 4, 8).seqused_k, (std::vector<int32_t>{5, 6}));
  for (const nlohmann::json& bad : {nlohmann::json::array(), nlohmann::json{{"causal", 3}},
                                    nlohmann::json{{"window_left", "3"}}, nlohmann::json{{"seqused_k", {5}}},
                                    nlohmann::json{{"leftpad_k", {1, "x"}}}}) {
    EXPECT_THROW(process::DescriptorFromJson(bad, 2, 4, 8), process::ProtocolError) << bad.dump();
  }
}

constexpr const char* kPadQueries =
    "the rows with no visible key are pad queries in no varlen sequence: the kernel produces no output for them";

class NumpyDescriptorTest : public test::ScratchDirTest {
 protected:
  nlohmann::json Gate(const std::string& script, const std::string& laws, int cases, int expect,
                      const std::string& mode = " --descriptor") {
    const std::string adapter = "exec:/usr/bin/python3 " + script + mode;
    const test::CliRun run = test::RunAttncheck(dir_, ATTNCHECK_SOURCE_DIR,
                                                "gate --adapter " + test::Quoted(adapter) + laws + " --cases " +
                                                    std::to_string(cases) + " --seed 3 -q --json " +
                                                    test::Quoted((dir_ / "s.json").string()) + " --report-dir " +
                                                    test::Quoted((dir_ / "r").string()),
                                                "ATTNCHECK_CALL_TIMEOUT=30 PYTHONPATH=" +
                                                    test::Quoted(ATTNCHECK_SOURCE_DIR "/python"));  // for copies
    EXPECT_EQ(run.code, expect) << run.out << run.err;
    return nlohmann::json::parse(test::ReadText(dir_ / "s.json"));
  }
};

TEST_F(NumpyDescriptorTest, PassesTheGateThroughDescriptors) {
  if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no numpy";
  const nlohmann::json summary = Gate("examples/process/attention_backend.py", "", 60, 0);
  int passed = 0;
  for (const nlohmann::json& r : summary["results"]) {
    EXPECT_EQ(r["errors"], 0) << r.dump();
    passed += r["passed"].get<int>();
  }
  EXPECT_GT(passed, 100);

  // One-line defect: the descriptor's causal flag is ignored.
  std::string text = test::ReadText(std::filesystem::path(ATTNCHECK_SOURCE_DIR) / "examples/process/attention_backend.py");
  const std::string line = "    k, v, d = call.k, call.v, call.descriptor\n";
  ASSERT_NE(text.find(line), std::string::npos);
  text.replace(text.find(line), line.size(),
               line + "    call = attncheck.AttentionCall(**dict(vars(call), "
                      "descriptor=attncheck.Descriptor(dict(d.raw, causal=0))))\n");
  const std::filesystem::path broken = dir_ / "broken_backend.py";
  std::ofstream(broken) << text;
  Gate(broken.string(), " --law non-interference", 60, 1);
}

// Varlen mode: packed tensors [1, H, total, D] and cu_seqlens over the protocol;
// packed documents and left-padded query rows are checked, not skipped.
TEST_F(NumpyDescriptorTest, VarlenModePassesAndChecksPackedDocuments) {
  if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no numpy";
  const nlohmann::json summary =
      Gate("examples/process/attention_backend.py",
           " --law packed-isolation --law masked-rows --law reference-agreement", 60, 0, " --descriptor --varlen");
  for (const nlohmann::json& r : summary["results"]) {
    EXPECT_EQ(r["errors"], 0) << r.dump();
    // masked-rows: its rows with no visible key are a sequence's queries before its
    // first key (law_support.h EmptyRowsCaseFor), which a varlen kernel produces; pad
    // queries in no sequence, which it never produces, were all it had before (then
    // more than half the cases skipped)
    EXPECT_EQ(r["skip_reasons"].value(kPadQueries, 0), 0) << r.dump();
    EXPECT_GT(r["passed"].get<int>(), 50) << r.dump();
  }
}

// Paged mode: k/v cross the protocol as pages [num_pages, Hkv, 16, D] (the backend
// refuses any other shape) and are read through the block table, on the padded
// batch and on varlen; reading row 0 of the table for every sequence fails.
TEST_F(NumpyDescriptorTest, PagedModeReadsTheBlockTable) {
  if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no numpy";
  const std::string laws = " --law non-interference --law reference-agreement";
  for (const char* mode : {" --descriptor --paged", " --descriptor --varlen --paged"}) {
    const nlohmann::json summary = Gate("examples/process/attention_backend.py", laws, 60, 0, mode);
    for (const nlohmann::json& r : summary["results"]) {
      EXPECT_EQ(r["errors"], 0) << mode << r.dump();
      EXPECT_GT(r["passed"].get<int>(), 40) << mode << r.dump();
    }
  }
  Gate("examples/process/attention_backend.py", " --law reference-agreement", 60, 1,
       " --descriptor --varlen --paged --defect-block-table-row0");
}

}  // namespace
}  // namespace attncheck
