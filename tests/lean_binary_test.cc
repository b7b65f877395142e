// The lean program (adapters/libtorch/loader.h): no program links libtorch; the
// libtorch adapters come from libattncheck_libtorch.so, loaded on first use, and
// are listed as unavailable, with the reason, when it cannot load.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "adapters/registry.h"
#include "tests/cli_support.h"
#include "tests/library_gate.h"

namespace attncheck {
namespace {

using test::CliRun;
using test::Quoted;
using test::ReadText;
namespace fs = std::filesystem;

// Whether this process has a file whose name contains `part` mapped.
bool Mapped(const std::string& part) { return ReadText("/proc/self/maps").find(part) != std::string::npos; }

// The shared libraries `program` needs, as ldd prints them.
std::string Needed(const std::string& program) {
  std::string text;
  FILE* pipe = popen(("ldd " + Quoted(program) + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return text;
  char buffer[512];
  while (fgets(buffer, sizeof buffer, pipe) != nullptr) text += buffer;
  pclose(pipe);
  return text;
}

TEST(LeanBinary, ProgramLinksNoTorch) {
  const std::string needed = Needed(ATTNCHECK_BINARY);
  ASSERT_NE(needed.find("libc.so"), std::string::npos) << needed;  // ldd ran
  EXPECT_EQ(needed.find("torch"), std::string::npos) << needed;
}

#ifdef ATTNCHECK_HAVE_LIBTORCH

// Listing and making other adapters leave libtorch unloaded; the first libtorch
// adapter loads it.
TEST(LeanBinary, LoadsLibtorchOnFirstUse) {
  ASSERT_FALSE(Mapped("libtorch")) << "this test program links libtorch";
  bool listed = false;
  for (const AdapterInfo& info : ListAdapters()) listed = listed || info.name == "libtorch-sdpa";
  EXPECT_TRUE(listed);
  EXPECT_NE(MakeAdapter("eigen"), nullptr);
  EXPECT_FALSE(Mapped("libtorch")) << "listing or making eigen loaded libtorch";
  const std::unique_ptr<Adapter> sdpa = MakeAdapter("libtorch-sdpa");
  EXPECT_EQ(sdpa->name(), "libtorch-sdpa");
  EXPECT_TRUE(Mapped("libattncheck_libtorch.so"));
  EXPECT_TRUE(Mapped("libtorch_cpu"));
}

class LeanBinaryCli : public test::ScratchDirTest {};

// A module that cannot load (here a text file; on a runner, libtorch missing):
// `list` still shows the three, unavailable with the loader's reason; naming one
// is a one-line error (exit 2); the default gate runs as before.
TEST_F(LeanBinaryCli, UnloadableModuleIsUnavailable) {
  const fs::path module = dir_ / "libattncheck_libtorch.so";
  std::ofstream(module) << "not a shared library\n";
  const std::string env = "ATTNCHECK_LIBTORCH_MODULE=" + Quoted(module.string());
  // (the Python libraries' backends, seconds each to start, are not what this test reads)
  const CliRun list = test::RunAttncheck(dir_, dir_, "list", env + " " + test::OtherPythonLibrariesUnavailable());
  ASSERT_EQ(list.code, 0) << list.err;
  for (const char* name : {"libtorch-sdpa", "libtorch-masked-softmax", "libtorch-mha"}) {
    EXPECT_NE(list.out.find(name), std::string::npos) << list.out;
  }
  EXPECT_NE(list.out.find("libtorch-sdpa is unavailable: cannot load " + module.string()), std::string::npos)
      << list.out;
  const CliRun gate = test::RunAttncheck(dir_, dir_, "gate --adapter libtorch-mha --cases 2 --quiet", env);
  EXPECT_EQ(gate.code, 2);
  test::ExpectOneErrorLine(gate);
  EXPECT_NE(gate.err.find("libtorch-mha is unavailable: cannot load"), std::string::npos) << gate.err;
  const CliRun plain = test::RunAttncheck(dir_, dir_, "gate --adapter eigen --cases 3 --quiet", env);
  EXPECT_EQ(plain.code, 0) << plain.err;
}

#else

TEST(LeanBinary, LibtorchNotBuilt) { GTEST_SKIP() << "libtorch module not built in this configuration"; }

#endif

}  // namespace
}  // namespace attncheck
