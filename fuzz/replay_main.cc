// Runs saved inputs through a fuzz target without libFuzzer (as fmt's and
// abseil's fuzz harnesses do), so the ordinary g++ build and ctest replay seed
// corpora and regressions: `<target>_replay FILE_OR_DIR…`. Folders are read one
// level deep in name order; names starting with '.' and *.md files are skipped.
// A failing input aborts, exactly as under libFuzzer.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

bool ReadBytes(const std::filesystem::path& path, std::vector<uint8_t>& bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE_OR_DIR…\n", argv[0]);
    return 2;
  }
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg(argv[i]);
    std::error_code error;
    if (fs::is_directory(arg, error)) {
      std::vector<fs::path> found;
      for (const fs::directory_entry& e : fs::directory_iterator(arg, error)) {
        const std::string name = e.path().filename().string();
        if (!e.is_regular_file() || name.starts_with(".") || name.ends_with(".md")) continue;
        found.push_back(e.path());
      }
      std::sort(found.begin(), found.end());
      inputs.insert(inputs.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(arg, error)) {
      inputs.push_back(arg);
    } else {
      std::fprintf(stderr, "%s: no such file or folder\n", argv[i]);
      return 2;
    }
  }
  int accepted = 0, rejected = 0;
  std::vector<uint8_t> bytes;
  for (const fs::path& path : inputs) {
    if (!ReadBytes(path, bytes)) {
      std::fprintf(stderr, "%s: cannot read\n", path.string().c_str());
      return 2;
    }
    std::fprintf(stderr, "running %s (%zu bytes)\n", path.string().c_str(), bytes.size());
    // A copy of exactly `size` bytes, so ASan catches reads past the end.
    std::vector<uint8_t> copy(bytes);
    const int result = LLVMFuzzerTestOneInput(copy.data(), copy.size());
    (result == 0 ? accepted : rejected) += 1;
  }
  std::printf("replayed %zu inputs: %d ran, %d rejected (-1)\n", inputs.size(), accepted, rejected);
  return 0;
}
