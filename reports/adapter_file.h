// The file an adapter from outside the program runs (DESIGN §7, "a report folder
// is self-contained"): the library of plugin:PATH, the script an exec:COMMAND
// names. A report folder keeps a copy, and a replay names that copy in its place.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace attncheck {

// How a run makes an adapter it was given: plugin:PATH runs as
// isolated:plugin:PATH (a crash is a verdict, not the end of the run) unless
// `in_process`; every other name as given.
std::string RunAs(std::string_view adapter, bool in_process);
// "isolated" (a child process of the harness: isolated:…, or an exec: backend) or "in-process".
std::string_view Isolation(std::string_view run_as);

// Where an adapter name writes the file it runs.
struct AdapterFile {
  std::string path;  // as written in the name
  size_t at = 0;     // its offset in the name
};

// The file adapter name `adapter` runs (also under isolated:): plugin:PATH → PATH;
// exec:COMMAND → the first argument after the program that names a regular file
// (python3 my_backend.py → my_backend.py), else the program when a path names it
// outside the system folders (./backend); nullopt for in-tree adapters and commands
// that name no file (python3 -m pkg).
std::optional<AdapterFile> FindAdapterFile(std::string_view adapter);

// `adapter` with `file` (as FindAdapterFile found it in `adapter`) named `path`
// instead (shell-quoted in an exec: command).
std::string WithAdapterFile(std::string_view adapter, const AdapterFile& file, std::string_view path);
// The same with the file FindAdapterFile finds; `adapter` itself when it names none.
std::string WithAdapterFile(std::string_view adapter, std::string_view path);

// `adapter` with its file named by its absolute path (relative names resolve
// against the working directory): the name that runs the same file from anywhere
// on this machine.
std::string WithAbsoluteAdapterFile(std::string_view adapter);

}  // namespace attncheck
