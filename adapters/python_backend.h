// The adapters served by a Python library through the attncheck kit (python/): one row
// per library (which Python, which installed package and version series, which script),
// found without starting Python; the registry lists a library's adapters as unavailable
// with the reason when the lookup fails. torch-* (adapters/torch), jax-* (adapters/jax),
// hf-* (adapters/transformers), openvino-* (adapters/openvino) and ort131-*
// (adapters/onnxruntime/backend.py).
#pragma once

#include <array>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "adapters/adapter.h"

namespace attncheck {

// An installed distribution a library's adapters need: its dist-info name and the release
// series the adapters were written against ("2.13": any 2.13.*).
struct PythonPackage {
  std::string_view name;    // "" = none
  std::string_view series;
};

// One Python library whose adapters run `python adapters/<script> --variant VARIANT`.
struct PythonLibrary {
  std::string_view python_env;            // a Python to use instead of <source>/third_party/venv/bin/python
  std::array<PythonPackage, 2> packages;  // each installed in its series (jax needs jaxlib of its own
                                          // version; the ONNX Runtime backend builds models with onnx);
                                          // series "": any version
  std::string_view script;                // under adapters/ (or share/attncheck/ when installed)
  bool python_env_required = false;       // no default Python: only the one python_env names
};

inline constexpr PythonLibrary kTorchLibrary = {"ATTNCHECK_TORCH_PYTHON", {{{"torch", "2.13"}, {}}},
                                                "torch/backend.py"};
// torch-cuda-*: the same backend on a GPU machine's own torch built with CUDA (any release;
// the project's environment pins the CPU build, so it is never the default).
inline constexpr PythonLibrary kTorchCudaLibrary = {"ATTNCHECK_TORCH_CUDA_PYTHON", {{{"torch", ""}, {}}},
                                                    "torch/backend.py", true};
inline constexpr PythonLibrary kJaxLibrary = {"ATTNCHECK_JAX_PYTHON", {{{"jax", "0.10"}, {"jaxlib", "0.10"}}},
                                              "jax/backend.py"};
// transformers 5.24 runs on torch 2.13 (the pin of scripts/make-python-env.sh).
inline constexpr PythonLibrary kTransformersLibrary = {"ATTNCHECK_TRANSFORMERS_PYTHON",
                                                       {{{"transformers", "5.24"}, {"torch", "2.13"}}},
                                                       "transformers/backend.py"};
inline constexpr PythonLibrary kOpenVinoLibrary = {"ATTNCHECK_OPENVINO_PYTHON", {{{"openvino", "2026.4"}, {}}},
                                                   "openvino/backend.py"};
inline constexpr PythonLibrary kOrtPythonLibrary = {"ATTNCHECK_ORT_PYTHON",
                                                    {{{"onnxruntime", "1.31"}, {"onnx", "1.23"}}},
                                                    "onnxruntime/backend.py"};

// One adapter of a library: its name, the script's --variant, the text `list` shows.
struct PythonAdapterName {
  std::string_view name;
  std::string_view variant;  // backend.py --variant
  std::string_view description;
  int call_timeout_s;        // the least per-call limit (0: the default); ATTNCHECK_CALL_TIMEOUT may raise it
};

// Where a library's backend runs from, or why it cannot.
struct PythonLookup {
  std::string command_prefix;  // "PYTHONPATH='…/python' exec '…/python' '…/backend.py'"
  std::string missing;         // why not; empty when found
};
PythonLookup FindPythonBackend(const PythonLibrary& library);

// The shell command of one adapter: prefix + " --variant VARIANT".
std::string PythonCommand(const PythonLookup& lookup, const PythonAdapterName& adapter);

// The adapter: an exec: process adapter named `adapter.name`, its per-call limit at least
// `call_timeout_s`.
std::unique_ptr<Adapter> MakePythonAdapter(const PythonLookup& lookup, const PythonAdapterName& adapter);

}  // namespace attncheck
