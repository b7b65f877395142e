// The attncheck process protocol (adapters/process/PROTOCOL.md): a message is a
// 4-byte little-endian length n, n bytes of a JSON object (the header), then the
// raw little-endian tensors the header's "tensors" array lists, in order, with
// no padding. This file is the strict reader and the writer; every malformed
// message becomes one ProtocolError line (an AdapterError of class kGarbage),
// never a crash or an unbounded allocation.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "adapters/adapter_fault.h"

namespace attncheck::process {

// Protocol 2 adds the visibility descriptor (mask convention "descriptor"); a
// backend answering hello with protocol 1 is taken unchanged.
inline constexpr int kProtocolVersion = 2;
inline constexpr int kOldestProtocolVersion = 1;
inline constexpr uint32_t kMaxHeaderBytes = 1u << 20;       // 1 MiB of JSON
inline constexpr uint64_t kMaxPayloadBytes = 1ull << 30;    // 1 GiB of tensors per message
inline constexpr int kMaxTensors = 64;
inline constexpr int kMaxRank = 8;
inline constexpr int kMaxNesting = 64;         // JSON depth of a header

class ProtocolError : public AdapterError {
 public:
  explicit ProtocolError(const std::string& what) : AdapterError(AdapterFault::kGarbage, "protocol: " + what) {}
};

enum class TensorDtype { kF32, kI32, kU8 };
std::string_view Name(TensorDtype);
size_t ElementBytes(TensorDtype);

struct Tensor {
  std::string name;
  TensorDtype dtype = TensorDtype::kF32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;  // little-endian elements, size = elements · ElementBytes

  size_t elements() const;
  std::span<const float> f32() const;  // the data as floats (dtype must be f32)
  std::span<const int32_t> i32() const;
  std::span<const uint8_t> u8() const { return bytes; }

  static Tensor F32(std::string name, std::vector<int64_t> shape, std::span<const float> values);
  static Tensor I32(std::string name, std::vector<int64_t> shape, std::span<const int> values);
  static Tensor U8(std::string name, std::vector<int64_t> shape, std::span<const uint8_t> values);
};

struct Message {
  nlohmann::json header;        // without "tensors" (the reader moves them into `tensors`)
  std::vector<Tensor> tensors;  // in header order

  std::string op() const { return header.value("op", std::string()); }
  // The tensor named `name`, checked against dtype and shape; ProtocolError when
  // it is missing or differs.
  const Tensor& Get(std::string_view name, TensorDtype dtype, const std::vector<int64_t>& shape) const;
  const Tensor* Find(std::string_view name) const;
};

// The tensor descriptors of a header: "tensors" must be an array (or absent) of
// {"name": unique string, "dtype": "f32"|"i32"|"u8", "shape": [non-negative ints]}
// whose total size stays within kMaxPayloadBytes. Returns the tensors with empty
// bytes and the total payload size.
std::vector<Tensor> ParseTensorList(const nlohmann::json& header, uint64_t* payload_bytes);

// A header from JSON text: an object with a string "op" and a valid tensor list.
nlohmann::json ParseHeader(std::string_view text);

// One whole message from bytes (length, header, payload); trailing bytes are an
// error. The entry point of the protocol fuzz target.
Message ParseMessage(std::span<const uint8_t> bytes);

// The bytes of a message: header (with the "tensors" list written from `tensors`)
// and payload.
std::vector<uint8_t> EncodeMessage(nlohmann::json header, const std::vector<Tensor>& tensors);

// Reads one message from a file descriptor before `deadline`. Throws
// ProtocolError on malformed input, AdapterError(kTimeout) when the deadline
// passes, and PeerClosed when the stream ends before a message starts or in
// the middle of one.
using Deadline = std::chrono::steady_clock::time_point;
class PeerClosed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
Message ReadMessage(int fd, Deadline deadline);
// Writes all bytes before `deadline` (AdapterError(kTimeout) after it, PeerClosed
// when the reader has gone).
void WriteAll(int fd, std::span<const uint8_t> bytes, Deadline deadline);

}  // namespace attncheck::process
