// Process requests carry what a kernel is told, never the case (issue 14 point 4):
// the requests a gate sends to the numpy backend, recorded on their way in, have no
// `case` and carry the KernelSpec fields (`dtype`, `softcap`, `encoding`,
// `weights_seed`) on every attention, rope and session_open.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/cli_support.h"
#include "tests/law_stream.h"

namespace attncheck {
namespace {

namespace fs = std::filesystem;

// The headers of a recorded request stream (PROTOCOL.md framing: u32 little-endian
// header length, the JSON header, then its tensors back to back).
std::vector<nlohmann::json> Headers(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::vector<nlohmann::json> headers;
  unsigned char size[4];
  while (in.read(reinterpret_cast<char*>(size), 4)) {
    const uint32_t n = size[0] | size[1] << 8 | size[2] << 16 | static_cast<uint32_t>(size[3]) << 24;
    std::string text(n, '\0');
    if (!in.read(text.data(), n)) break;
    nlohmann::json header = nlohmann::json::parse(text);
    size_t body = 0;
    for (const nlohmann::json& t : header.value("tensors", nlohmann::json::array())) {
      size_t count = t["dtype"] == "u8" ? 1 : 4;
      for (const nlohmann::json& d : t["shape"]) count *= d.get<size_t>();
      body += count;
    }
    in.ignore(static_cast<std::streamsize>(body));
    headers.push_back(std::move(header));
  }
  return headers;
}

class ProcessRequests : public test::ScratchDirTest {};

TEST_F(ProcessRequests, CarryTheKernelSpecNotTheCase) {
  if (!test::HaveNumpy()) GTEST_SKIP() << "/usr/bin/python3 cannot import numpy";
  const fs::path recorded = dir_ / "requests.bin";
  std::ofstream(dir_ / "record.sh") << "tee -a '" << recorded.string() << "' | exec /usr/bin/python3 '"
                                    << ATTNCHECK_SOURCE_DIR << "/examples/process/attention_backend.py'\n";
  const test::CliRun run = test::RunAttncheck(
      dir_, dir_, "gate --adapter 'exec:sh " + (dir_ / "record.sh").string() + "' --cases 6 -q --report-dir r",
      "ATTNCHECK_CALL_TIMEOUT=30");
  EXPECT_EQ(run.code, 0) << run.out << run.err;

  std::map<std::string, int> ops;
  for (const nlohmann::json& h : Headers(recorded)) {
    const std::string op = h["op"];
    ++ops[op];
    EXPECT_FALSE(h.contains("case")) << h.dump();
    if (op != "attention" && op != "rope" && op != "session_open") continue;
    for (const char* field : {"dtype", "softcap", "encoding", "weights_seed"}) {
      EXPECT_TRUE(h.contains(field)) << field << " missing: " << h.dump();
    }
    EXPECT_TRUE(h["encoding"].contains("kind")) << h.dump();
  }
  EXPECT_GT(ops["attention"], 0);
  EXPECT_GT(ops["rope"], 0);
  EXPECT_GT(ops["session_open"], 0);
  EXPECT_GT(ops["session_attend"], 0);
}

}  // namespace
}  // namespace attncheck
