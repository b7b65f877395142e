// The strict protocol reader and writer (protocol.h). Sizes are checked before
// anything is allocated; reads and writes wait with poll() so a silent peer
// costs at most the deadline.
#include "adapters/process/protocol.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <bit>
#include <optional>
#include <set>

#include <fmt/ranges.h>

namespace attncheck::process {
namespace {

static_assert(std::endian::native == std::endian::little, "the protocol's tensors are little-endian");

uint32_t ReadLength(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}

std::optional<TensorDtype> ParseTensorDtype(std::string_view name) {
  for (TensorDtype d : {TensorDtype::kF32, TensorDtype::kI32, TensorDtype::kU8}) {
    if (Name(d) == name) return d;
  }
  return std::nullopt;
}

std::string ShapeText(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

// Milliseconds left until the deadline, for poll (at least 0).
int MillisecondsLeft(Deadline deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1 << 30));
}

// Waits until fd is ready for `events`; throws AdapterError(kTimeout) at the deadline.
void Wait(int fd, short events, Deadline deadline, const char* what) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int ready = poll(&p, 1, MillisecondsLeft(deadline));
    if (ready > 0) return;  // readable, writable, or hung up (read/write says which)
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) throw PeerClosed(fmt::format("poll failed while {}: {}", what, std::strerror(errno)));
    if (std::chrono::steady_clock::now() >= deadline) {
      throw AdapterError(AdapterFault::kTimeout, fmt::format("no answer within the time limit ({})", what));
    }
  }
}

// Reads exactly n bytes; `started` says whether part of the message came already.
void ReadExact(int fd, uint8_t* data, size_t n, Deadline deadline, bool started, const char* what) {
  size_t done = 0;
  while (done < n) {
    Wait(fd, POLLIN, deadline, what);
    const ssize_t got = read(fd, data + done, n - done);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got < 0 && errno != ECONNRESET) {
      throw PeerClosed(fmt::format("read failed while {}: {}", what, std::strerror(errno)));
    }
    if (got <= 0) {  // end of stream (a reset peer is one that exited with our bytes unread)
      throw PeerClosed(started || done > 0 ? fmt::format("stream ended in the middle of a message ({})", what)
                                           : std::string("stream ended"));
    }
    done += static_cast<size_t>(got);
  }
}

}  // namespace

std::string_view Name(TensorDtype d) {
  switch (d) {
    case TensorDtype::kF32: return "f32";
    case TensorDtype::kI32: return "i32";
    case TensorDtype::kU8: return "u8";
  }
  return "?";
}

size_t ElementBytes(TensorDtype d) { return d == TensorDtype::kU8 ? 1 : 4; }

size_t Tensor::elements() const {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

std::span<const float> Tensor::f32() const {
  return {reinterpret_cast<const float*>(bytes.data()), bytes.size() / sizeof(float)};
}
std::span<const int32_t> Tensor::i32() const {
  return {reinterpret_cast<const int32_t*>(bytes.data()), bytes.size() / sizeof(int32_t)};
}

namespace {
template <class T>
Tensor Make(std::string name, TensorDtype dtype, std::vector<int64_t> shape, std::span<const T> values) {
  Tensor t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.shape = std::move(shape);
  if (t.elements() != values.size()) {
    throw std::invalid_argument(fmt::format("tensor {}: {} values for shape {}", t.name, values.size(),
                                            ShapeText(t.shape)));
  }
  t.bytes.resize(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}
}  // namespace

Tensor Tensor::F32(std::string name, std::vector<int64_t> shape, std::span<const float> values) {
  return Make(std::move(name), TensorDtype::kF32, std::move(shape), values);
}
Tensor Tensor::I32(std::string name, std::vector<int64_t> shape, std::span<const int> values) {
  return Make(std::move(name), TensorDtype::kI32, std::move(shape), values);
}
Tensor Tensor::U8(std::string name, std::vector<int64_t> shape, std::span<const uint8_t> values) {
  return Make(std::move(name), TensorDtype::kU8, std::move(shape), values);
}

const Tensor* Message::Find(std::string_view name) const {
  for (const Tensor& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const Tensor& Message::Get(std::string_view name, TensorDtype dtype, const std::vector<int64_t>& shape) const {
  const Tensor* t = Find(name);
  if (t == nullptr) throw ProtocolError(fmt::format("'{}' message lacks tensor '{}'", op(), name));
  if (t->dtype != dtype || t->shape != shape) {
    throw ProtocolError(fmt::format("tensor '{}' is {} {}, expected {} {}", name, Name(t->dtype),
                                    ShapeText(t->shape), Name(dtype), ShapeText(shape)));
  }
  return *t;
}

std::vector<Tensor> ParseTensorList(const nlohmann::json& header, uint64_t* payload_bytes) {
  std::vector<Tensor> tensors;
  uint64_t total = 0;
  if (payload_bytes) *payload_bytes = 0;
  if (!header.contains("tensors")) return tensors;
  const nlohmann::json& list = header["tensors"];
  if (!list.is_array()) throw ProtocolError("header field 'tensors' is not an array");
  if (list.size() > static_cast<size_t>(kMaxTensors)) {
    throw ProtocolError(fmt::format("header lists {} tensors (at most {})", list.size(), kMaxTensors));
  }
  std::set<std::string> names;
  for (size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& entry = list[i];
    if (!entry.is_object()) throw ProtocolError(fmt::format("tensors[{}] is not an object", i));
    Tensor t;
    if (!entry.contains("name") || !entry["name"].is_string()) {
      throw ProtocolError(fmt::format("tensors[{}].name is missing or not a string", i));
    }
    t.name = entry["name"].get<std::string>();
    if (!names.insert(t.name).second) throw ProtocolError(fmt::format("tensor '{}' is listed twice", t.name));
    if (!entry.contains("dtype") || !entry["dtype"].is_string()) {
      throw ProtocolError(fmt::format("tensor '{}': dtype is missing or not a string", t.name));
    }
    const std::optional<TensorDtype> dtype = ParseTensorDtype(entry["dtype"].get<std::string>());
    if (!dtype) {
      throw ProtocolError(fmt::format("tensor '{}': unknown dtype '{}' (f32, i32, u8)", t.name,
                                      entry["dtype"].get<std::string>()));
    }
    t.dtype = *dtype;
    if (!entry.contains("shape") || !entry["shape"].is_array()) {
      throw ProtocolError(fmt::format("tensor '{}': shape is missing or not an array", t.name));
    }
    const nlohmann::json& shape = entry["shape"];
    if (shape.size() > static_cast<size_t>(kMaxRank)) {
      throw ProtocolError(fmt::format("tensor '{}': rank {} (at most {})", t.name, shape.size(), kMaxRank));
    }
    uint64_t bytes = ElementBytes(t.dtype);
    for (const nlohmann::json& d : shape) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0) {
        throw ProtocolError(fmt::format("tensor '{}': shape {} holds a value that is not a non-negative integer",
                                        t.name, shape.dump()));
      }
      const uint64_t extent = d.get<uint64_t>();
      if (extent > kMaxPayloadBytes || (extent != 0 && bytes > kMaxPayloadBytes / extent)) {
        throw ProtocolError(fmt::format("tensor '{}': shape {} is over the {}-byte message limit", t.name,
                                        shape.dump(), kMaxPayloadBytes));
      }
      bytes *= extent;
      t.shape.push_back(static_cast<int64_t>(extent));
    }
    total += bytes;
    if (total > kMaxPayloadBytes) {
      throw ProtocolError(fmt::format("tensors total more than the {}-byte message limit", kMaxPayloadBytes));
    }
    tensors.push_back(std::move(t));
  }
  if (payload_bytes) *payload_bytes = total;
  return tensors;
}

nlohmann::json ParseHeader(std::string_view text) {
  // Nesting is bounded so nothing downstream (dump, destruction) recurses deeply.
  const nlohmann::json::parser_callback_t limit_depth = [](int depth, nlohmann::json::parse_event_t,
                                                            nlohmann::json&) {
    if (depth > kMaxNesting) throw ProtocolError(fmt::format("header nests deeper than {} levels", kMaxNesting));
    return true;
  };
  nlohmann::json header = nlohmann::json::parse(text, limit_depth, /*allow_exceptions=*/false);
  if (header.is_discarded()) throw ProtocolError(fmt::format("header is not valid JSON ({} bytes)", text.size()));
  if (!header.is_object()) throw ProtocolError("header is not a JSON object");
  if (!header.contains("op") || !header["op"].is_string()) throw ProtocolError("header has no string field 'op'");
  ParseTensorList(header, nullptr);
  return header;
}

namespace {

uint32_t CheckedLength(uint32_t length) {
  if (length == 0) throw ProtocolError("header length is 0");
  if (length > kMaxHeaderBytes) {
    throw ProtocolError(fmt::format("header length {} is over the limit of {} bytes", length, kMaxHeaderBytes));
  }
  return length;
}

// The message from a parsed header, taking payload bytes from `read(dst, n)`.
template <class Read>
Message Assemble(nlohmann::json header, Read&& read) {
  Message m;
  m.tensors = ParseTensorList(header, nullptr);
  header.erase("tensors");
  m.header = std::move(header);
  for (Tensor& t : m.tensors) {
    t.bytes.resize(t.elements() * ElementBytes(t.dtype));
    read(t.bytes.data(), t.bytes.size());
  }
  return m;
}

}  // namespace

Message ParseMessage(std::span<const uint8_t> bytes) {
  if (bytes.size() < 4) throw ProtocolError(fmt::format("message of {} bytes has no length prefix", bytes.size()));
  const uint32_t length = CheckedLength(ReadLength(bytes.data()));
  if (bytes.size() - 4 < length) {
    throw ProtocolError(fmt::format("header length {} but only {} bytes follow", length, bytes.size() - 4));
  }
  nlohmann::json header = ParseHeader(std::string_view(reinterpret_cast<const char*>(bytes.data() + 4), length));
  uint64_t payload = 0;
  ParseTensorList(header, &payload);
  const size_t rest = bytes.size() - 4 - length;
  if (rest != payload) {
    throw ProtocolError(fmt::format("header states {} bytes of tensors but {} bytes follow", payload, rest));
  }
  size_t at = 4 + length;
  return Assemble(std::move(header), [&](uint8_t* dst, size_t n) {
    if (n > 0) std::memcpy(dst, bytes.data() + at, n);
    at += n;
  });
}

std::vector<uint8_t> EncodeMessage(nlohmann::json header, const std::vector<Tensor>& tensors) {
  nlohmann::json list = nlohmann::json::array();
  size_t payload = 0;
  for (const Tensor& t : tensors) {
    list.push_back({{"name", t.name}, {"dtype", Name(t.dtype)}, {"shape", t.shape}});
    payload += t.bytes.size();
  }
  if (!tensors.empty()) header["tensors"] = std::move(list);
  const std::string text = header.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > kMaxHeaderBytes) throw std::length_error("protocol header over the limit");
  std::vector<uint8_t> bytes;
  bytes.reserve(4 + text.size() + payload);
  const uint32_t length = static_cast<uint32_t>(text.size());
  for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<uint8_t>(length >> (8 * i)));
  bytes.insert(bytes.end(), text.begin(), text.end());
  for (const Tensor& t : tensors) bytes.insert(bytes.end(), t.bytes.begin(), t.bytes.end());
  return bytes;
}

Message ReadMessage(int fd, Deadline deadline) {
  uint8_t prefix[4];
  ReadExact(fd, prefix, 4, deadline, false, "reading a message length");
  const uint32_t length = CheckedLength(ReadLength(prefix));
  std::string text(length, '\0');
  ReadExact(fd, reinterpret_cast<uint8_t*>(text.data()), length, deadline, true, "reading a header");
  nlohmann::json header = ParseHeader(text);
  return Assemble(std::move(header), [&](uint8_t* dst, size_t n) {
    ReadExact(fd, dst, n, deadline, true, "reading tensors");
  });
}

void WriteAll(int fd, std::span<const uint8_t> bytes, Deadline deadline) {
  size_t done = 0;
  while (done < bytes.size()) {
    Wait(fd, POLLOUT, deadline, "sending a request");
    // send() with MSG_NOSIGNAL on sockets: a peer that died gives EPIPE, not SIGPIPE.
    ssize_t put = send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (put < 0 && errno == ENOTSOCK) put = write(fd, bytes.data() + done, bytes.size() - done);
    if (put < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (put < 0 && (errno == EPIPE || errno == ECONNRESET)) throw PeerClosed("stream ended");
    if (put < 0) throw PeerClosed(fmt::format("write failed: {}", std::strerror(errno)));
    done += static_cast<size_t>(put);
  }
}

}  // namespace attncheck::process
