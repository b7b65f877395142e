// The replay commands a report hands over (DESIGN §7): one with the real path of
// the binary and the report folder, runnable anywhere on this machine, and one
// relative to the folder, runnable from inside it once the folder is sent on;
// both with the environment variables of the run that change what it does.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attncheck {

// s as one shell word: as is when it is safe, else single-quoted.
std::string ShellQuoted(std::string_view s);

// The binary the commands name: "attncheck" (found on PATH) until the program
// sets its real path at start-up (cli/main.cc); set once, before any thread.
void SetAttncheckBinary(std::string path);
const std::string& AttncheckBinary();
// The real path of the running program (/proc/self/exe), else argv0.
std::string RealProgramPath(const char* argv0);

// The environment variables attncheck reads that change a run (name, what it
// does), and those set in this process as (name, value).
const std::vector<std::pair<std::string_view, std::string_view>>& BehaviourVariables();
std::vector<std::pair<std::string, std::string>> BehaviourEnvironment();

// `[VAR=value …] <binary> replay <case_file> --adapter <adapter> --law <law>`,
// shell-quoted; the case file made absolute.
std::string ReplayCommand(std::string_view case_file, std::string_view adapter, std::string_view law);
// `[VAR=value …] attncheck replay case.json --adapter … --law …`, to run inside the report folder.
std::string FolderReplayCommand(std::string_view adapter, std::string_view law);

}  // namespace attncheck
