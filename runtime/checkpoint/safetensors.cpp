// runtime/checkpoint/safetensors.cpp — safetensors writer and validating reader (format in the header).
#include "runtime/checkpoint/safetensors.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_set>

#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/atomic_file.hpp"

static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

namespace ptsim::runtime {
using core::InputError;
using core::AtomicFileWriter;

namespace {

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference implementation's limit (100 MB)
constexpr const char* kMetadataKey = "__metadata__";

struct DtypeInfo {
  SafetensorsDtype dtype;
  const char* name;
  std::size_t bytes;
};
constexpr DtypeInfo kDtypes[] = {
    {SafetensorsDtype::boolean, "BOOL", 1}, {SafetensorsDtype::u8, "U8", 1},
    {SafetensorsDtype::i8, "I8", 1},        {SafetensorsDtype::f8_e5m2, "F8_E5M2", 1},
    {SafetensorsDtype::f8_e4m3, "F8_E4M3", 1}, {SafetensorsDtype::i16, "I16", 2},
    {SafetensorsDtype::u16, "U16", 2},      {SafetensorsDtype::f16, "F16", 2},
    {SafetensorsDtype::bf16, "BF16", 2},    {SafetensorsDtype::i32, "I32", 4},
    {SafetensorsDtype::u32, "U32", 4},      {SafetensorsDtype::f32, "F32", 4},
    {SafetensorsDtype::f64, "F64", 8},      {SafetensorsDtype::i64, "I64", 8},
    {SafetensorsDtype::u64, "U64", 8},
};

const DtypeInfo& info(SafetensorsDtype d) {
  for (const DtypeInfo& i : kDtypes)
    if (i.dtype == d) return i;
  throw std::invalid_argument("unknown SafetensorsDtype");
}

// numel · bytes, or nullopt on overflow of uint64.
std::optional<uint64_t> byte_size(std::span<const int64_t> shape, std::size_t elem_bytes) {
  uint64_t n = elem_bytes;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    const uint64_t ud = static_cast<uint64_t>(d);
    if (ud != 0 && n > std::numeric_limits<uint64_t>::max() / ud) return std::nullopt;
    n *= ud;
  }
  return n;
}

std::string shape_text(std::span<const int64_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

// One header entry, validated against the data size.
struct Entry {
  std::string name;
  SafetensorsDtype dtype = SafetensorsDtype::f32;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
};

struct ParsedHeader {
  SafetensorsMetadata metadata;
  std::vector<Entry> entries;  // sorted by data offset
};

ParsedHeader parse_header(std::string_view header, uint64_t data_bytes, const std::string& source) {
  if (header.empty() || header.front() != '{')
    throw InputError(fmt::format("{}: safetensors header does not start with '{{' (not a safetensors file?)", source));
  // Reject duplicate keys in any object (nlohmann would keep the last silently): a duplicated tensor
  // name makes the file ambiguous.
  std::vector<std::set<std::string>> keys_stack;
  std::string duplicate;
  auto callback = [&](int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (event == E::object_start) keys_stack.emplace_back();
    else if (event == E::object_end && !keys_stack.empty()) keys_stack.pop_back();
    else if (event == E::key && !keys_stack.empty() && parsed.is_string()) {
      if (!keys_stack.back().insert(parsed.get<std::string>()).second && duplicate.empty())
        duplicate = parsed.get<std::string>();
    }
    return true;
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(header.begin(), header.end(), callback);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: safetensors header is not valid JSON: {}", source, e.what()));
  }
  if (!duplicate.empty())
    throw InputError(fmt::format("{}: safetensors header repeats the key '{}'", source, duplicate));
  if (!j.is_object()) throw InputError(fmt::format("{}: safetensors header is not a JSON object", source));

  ParsedHeader out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& name = it.key();
    const nlohmann::json& v = it.value();
    if (name == kMetadataKey) {
      if (!v.is_object())
        throw InputError(fmt::format("{}: '__metadata__' must be an object of strings", source));
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string())
          throw InputError(fmt::format("{}: '__metadata__' entry '{}' must be a string, got {}", source, m.key(),
                                       m.value().type_name()));
        out.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    auto bad = [&](const std::string& what) {
      return InputError(fmt::format("{}: tensor '{}': {}", source, name, what));
    };
    if (!v.is_object()) throw bad("header entry is not an object");
    for (auto f = v.begin(); f != v.end(); ++f)
      if (f.key() != "dtype" && f.key() != "shape" && f.key() != "data_offsets")
        throw bad(fmt::format("unknown field '{}' (expected dtype, shape, data_offsets)", f.key()));
    if (!v.contains("dtype") || !v["dtype"].is_string()) throw bad("field 'dtype' is missing or not a string");
    if (!v.contains("shape") || !v["shape"].is_array()) throw bad("field 'shape' is missing or not an array");
    if (!v.contains("data_offsets") || !v["data_offsets"].is_array() || v["data_offsets"].size() != 2)
      throw bad("field 'data_offsets' is missing or not an array [begin, end]");
    Entry e;
    e.name = name;
    const std::string dtype_text = v["dtype"].get<std::string>();
    const std::optional<SafetensorsDtype> dtype = parse_safetensors_dtype(dtype_text);
    if (!dtype) throw bad(fmt::format("unknown dtype '{}'", dtype_text));
    e.dtype = *dtype;
    for (const nlohmann::json& d : v["shape"]) {
      if (!d.is_number_integer() || (d.is_number_integer() && !d.is_number_unsigned() && d.get<int64_t>() < 0))
        throw bad(fmt::format("shape entries must be non-negative integers, got {}", v["shape"].dump()));
      if (d.is_number_unsigned() && d.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        throw bad(fmt::format("shape entry {} is too large", d.dump()));
      e.shape.push_back(d.get<int64_t>());
    }
    for (const nlohmann::json& o : v["data_offsets"])
      if (!o.is_number_unsigned() && !(o.is_number_integer() && o.get<int64_t>() >= 0))
        throw bad(fmt::format("data_offsets must be non-negative integers, got {}", v["data_offsets"].dump()));
    e.begin = v["data_offsets"][0].get<uint64_t>();
    e.end = v["data_offsets"][1].get<uint64_t>();
    if (e.begin > e.end) throw bad(fmt::format("data_offsets [{}, {}] end before they begin", e.begin, e.end));
    if (e.end > data_bytes)
      throw bad(fmt::format("data_offsets [{}, {}] run past the {} data bytes in the file (truncated?)", e.begin,
                            e.end, data_bytes));
    const std::optional<uint64_t> expected = byte_size(e.shape, safetensors_dtype_bytes(e.dtype));
    if (!expected || *expected != e.end - e.begin)
      throw bad(fmt::format("{} × shape {} needs {} bytes but data_offsets [{}, {}] hold {}", dtype_text,
                            shape_text(e.shape), expected ? fmt::to_string(*expected) : std::string("too many"),
                            e.begin, e.end, e.end - e.begin));
    out.entries.push_back(std::move(e));
  }
  std::stable_sort(out.entries.begin(), out.entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  // The tensors must tile the data exactly: no overlap, no hole, nothing after the last one.
  uint64_t at = 0;
  const Entry* prev = nullptr;
  for (const Entry& e : out.entries) {
    if (e.begin < at)
      throw InputError(fmt::format("{}: tensor '{}' (bytes [{}, {})) overlaps tensor '{}' (bytes [{}, {}))", source,
                                   e.name, e.begin, e.end, prev->name, prev->begin, prev->end));
    if (e.begin > at)
      throw InputError(fmt::format("{}: data bytes [{}, {}) before tensor '{}' belong to no tensor", source, at,
                                   e.begin, e.name));
    at = e.end;
    prev = &e;
  }
  if (at != data_bytes)
    throw InputError(fmt::format("{}: {} data bytes after the last tensor belong to no tensor (file has {} data "
                                 "bytes, tensors cover {})",
                                 source, data_bytes - at, data_bytes, at));
  return out;
}

// Checks the 8-byte prefix against the file size; returns N.
uint64_t check_header_length(const unsigned char prefix[8], uint64_t file_bytes, const std::string& source) {
  uint64_t n = 0;
  for (int k = 7; k >= 0; --k) n = (n << 8) | prefix[k];
  if (n > kMaxHeaderBytes)
    throw InputError(fmt::format("{}: safetensors header length {} exceeds the {}-byte limit (corrupt file?)", source,
                                 n, kMaxHeaderBytes));
  if (n > file_bytes - 8)
    throw InputError(fmt::format("{}: safetensors header length {} exceeds the {} bytes after the length prefix "
                                 "(truncated file?)",
                                 source, n, file_bytes - 8));
  return n;
}

}  // namespace

std::size_t safetensors_dtype_bytes(SafetensorsDtype dtype) { return info(dtype).bytes; }
const char* to_string(SafetensorsDtype dtype) { return info(dtype).name; }
std::optional<SafetensorsDtype> parse_safetensors_dtype(std::string_view text) {
  for (const DtypeInfo& i : kDtypes)
    if (text == i.name) return i.dtype;
  return std::nullopt;
}

SafetensorsView safetensors_f32_view(std::string name, std::span<const float> values, std::vector<int64_t> shape) {
  if (shape.empty()) shape.push_back(static_cast<int64_t>(values.size()));
  return SafetensorsView{std::move(name), SafetensorsDtype::f32, std::move(shape), std::as_bytes(values)};
}

int64_t SafetensorsTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void SafetensorsTensor::copy_f32_to(std::span<float> out, const std::string& source) const {
  if (dtype != SafetensorsDtype::f32)
    throw InputError(fmt::format("{}: tensor '{}' is {}, expected F32", source, name, to_string(dtype)));
  if (static_cast<int64_t>(out.size()) != numel())
    throw InputError(fmt::format("{}: tensor '{}' has {} elements (shape {}), expected {}", source, name, numel(),
                                 shape_text(shape), out.size()));
  if (!data.empty()) std::memcpy(out.data(), data.data(), data.size());
}

std::vector<float> SafetensorsTensor::to_f32(const std::string& source) const {
  std::vector<float> v(static_cast<std::size_t>(dtype == SafetensorsDtype::f32 ? numel() : 0));
  copy_f32_to(v, source);
  return v;
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  for (const SafetensorsTensor& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

const SafetensorsTensor& SafetensorsFile::at(std::string_view name) const {
  if (const SafetensorsTensor* t = find(name)) return *t;
  throw InputError(fmt::format("{}: no tensor named '{}' ({} tensors in the file)", source, name, tensors.size()));
}

std::string safetensors_header(std::span<const SafetensorsView> tensors, const SafetensorsMetadata& metadata) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    j[kMetadataKey] = std::move(m);
  }
  std::unordered_set<std::string> names;
  uint64_t offset = 0;
  for (const SafetensorsView& t : tensors) {
    if (t.name.empty()) throw InputError("safetensors: a tensor has an empty name");
    if (t.name == kMetadataKey) throw InputError("safetensors: '__metadata__' cannot name a tensor");
    if (!names.insert(t.name).second)
      throw InputError(fmt::format("safetensors: tensor '{}' appears twice", t.name));
    const std::optional<uint64_t> bytes = byte_size(t.shape, safetensors_dtype_bytes(t.dtype));
    if (!bytes || *bytes != t.data.size())
      throw InputError(fmt::format("safetensors: tensor '{}': {} × shape {} needs {} bytes, got {}", t.name,
                                   to_string(t.dtype), shape_text(t.shape),
                                   bytes ? fmt::to_string(*bytes) : std::string("too many"), t.data.size()));
    j[t.name] = {{"dtype", to_string(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + *bytes}}};
    offset += *bytes;
  }
  std::string header = j.dump();
  // Pad with spaces so the data starts 8-byte aligned (8 + N ≡ 0 mod 8), as the reference writer does.
  header.append((8 - header.size() % 8) % 8, ' ');
  return header;
}

namespace {
std::array<std::byte, 8> length_prefix(uint64_t n) {
  std::array<std::byte, 8> p{};
  for (int k = 0; k < 8; ++k) p[k] = static_cast<std::byte>((n >> (8 * k)) & 0xff);
  return p;
}
}  // namespace

std::vector<std::byte> safetensors_serialize(std::span<const SafetensorsView> tensors,
                                             const SafetensorsMetadata& metadata) {
  const std::string header = safetensors_header(tensors, metadata);
  std::size_t total = 8 + header.size();
  for (const SafetensorsView& t : tensors) total += t.data.size();
  // Sized once and filled with memcpy (vector::insert trips GCC 12's -Wstringop-overflow false positive).
  std::vector<std::byte> out(total);
  const auto prefix = length_prefix(header.size());
  std::memcpy(out.data(), prefix.data(), 8);
  std::memcpy(out.data() + 8, header.data(), header.size());
  std::size_t at = 8 + header.size();
  for (const SafetensorsView& t : tensors) {
    if (!t.data.empty()) std::memcpy(out.data() + at, t.data.data(), t.data.size());
    at += t.data.size();
  }
  return out;
}

void write_safetensors(const std::string& path, std::span<const SafetensorsView> tensors,
                       const SafetensorsMetadata& metadata) {
  std::string header;
  try {
    header = safetensors_header(tensors, metadata);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", path, e.what()));
  }
  AtomicFileWriter w(path);
  const auto prefix = length_prefix(header.size());
  w.write(std::span<const std::byte>(prefix));
  w.write(header);
  for (const SafetensorsView& t : tensors) w.write(t.data);
  w.commit();
}

SafetensorsFile parse_safetensors(std::span<const std::byte> bytes, const std::string& source) {
  if (bytes.size() < 8)
    throw InputError(fmt::format("{}: {} bytes is too short for a safetensors file (8-byte header length first)",
                                 source, bytes.size()));
  const uint64_t n = check_header_length(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), source);
  const std::string_view header(reinterpret_cast<const char*>(bytes.data()) + 8, n);
  const uint64_t data_start = 8 + n;
  ParsedHeader h = parse_header(header, bytes.size() - data_start, source);
  SafetensorsFile f;
  f.source = source;
  f.metadata = std::move(h.metadata);
  for (Entry& e : h.entries) {
    SafetensorsTensor t{std::move(e.name), e.dtype, std::move(e.shape), {}};
    const auto first = bytes.begin() + static_cast<std::ptrdiff_t>(data_start + e.begin);
    t.data.assign(first, first + static_cast<std::ptrdiff_t>(e.end - e.begin));
    f.tensors.push_back(std::move(t));
  }
  return f;
}

SafetensorsFile read_safetensors(const std::string& path) {
  core::require_regular_file(path, "a safetensors file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open safetensors file: {}", path, std::strerror(errno)));
  in.seekg(0, std::ios::end);
  const std::streamoff size_signed = in.tellg();
  in.seekg(0, std::ios::beg);
  if (size_signed < 0) throw InputError(fmt::format("{}: cannot determine the file size", path));
  const uint64_t file_bytes = static_cast<uint64_t>(size_signed);
  if (file_bytes < 8)
    throw InputError(fmt::format("{}: {} bytes is too short for a safetensors file (8-byte header length first)",
                                 path, file_bytes));
  unsigned char prefix[8];
  in.read(reinterpret_cast<char*>(prefix), 8);
  const uint64_t n = check_header_length(prefix, file_bytes, path);
  std::string header(n, '\0');
  in.read(header.data(), static_cast<std::streamsize>(n));
  if (!in) throw InputError(fmt::format("{}: reading the {}-byte header failed", path, n));
  const uint64_t data_start = 8 + n;
  ParsedHeader h = parse_header(header, file_bytes - data_start, path);
  SafetensorsFile f;
  f.source = path;
  f.metadata = std::move(h.metadata);
  // Entries are sorted and contiguous, so the data is read sequentially straight into each tensor.
  for (Entry& e : h.entries) {
    SafetensorsTensor t{std::move(e.name), e.dtype, std::move(e.shape), {}};
    t.data.resize(e.end - e.begin);
    if (!t.data.empty()) {
      in.read(reinterpret_cast<char*>(t.data.data()), static_cast<std::streamsize>(t.data.size()));
      if (!in) throw InputError(fmt::format("{}: tensor '{}': reading {} bytes failed (file changed while read?)",
                                            path, t.name, t.data.size()));
    }
    f.tensors.push_back(std::move(t));
  }
  return f;
}

}  // namespace ptsim::runtime
