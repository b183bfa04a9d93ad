// runtime/checkpoint/safetensors.hpp — read and write the safetensors format
// (https://github.com/huggingface/safetensors, "Format"):
//   [8 bytes: N, unsigned little-endian] [N bytes: UTF-8 JSON header] [data bytes]
//   header = {"__metadata__": {"k": "v", ...}, "<tensor>": {"dtype": "F32", "shape": [..],
//             "data_offsets": [begin, end]}, ...}, padded with spaces so that 8 + N is a multiple of 8;
//   offsets are relative to the first data byte; the tensors cover the data exactly (no holes, no
//   overlap); data is little-endian, row-major.
// Writing streams tensors straight from the caller's buffers into an atomically replaced file
// (core/atomic_file.hpp). Reading validates everything and throws core::InputError naming the file and the
// tensor. Any dtype is read as raw bytes; F32 can be copied out as floats.
// Not here: memory mapping, big-endian hosts (static_assert), conversion between dtypes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ptsim::runtime {

enum class SafetensorsDtype { boolean, u8, i8, f8_e5m2, f8_e4m3, i16, u16, f16, bf16, i32, u32, f32, f64, i64, u64 };
std::size_t safetensors_dtype_bytes(SafetensorsDtype dtype);
const char* to_string(SafetensorsDtype dtype);  // the header spelling: "F32", "BF16", "BOOL", ...
std::optional<SafetensorsDtype> parse_safetensors_dtype(std::string_view text);

using SafetensorsMetadata = std::map<std::string, std::string>;  // "__metadata__": string → string only

// A tensor to write: borrows its bytes.
struct SafetensorsView {
  std::string name;
  SafetensorsDtype dtype = SafetensorsDtype::f32;
  std::vector<int64_t> shape;          // row-major; [] is a scalar (1 element)
  std::span<const std::byte> data;     // numel(shape) · dtype bytes, little-endian
};
// An F32 view; an empty `shape` means [values.size()].
SafetensorsView safetensors_f32_view(std::string name, std::span<const float> values, std::vector<int64_t> shape = {});

// A tensor read from a file: owns its bytes.
struct SafetensorsTensor {
  std::string name;
  SafetensorsDtype dtype = SafetensorsDtype::f32;
  std::vector<int64_t> shape;
  std::vector<std::byte> data;
  int64_t numel() const;
  // F32 only (else InputError naming `source` and the tensor): the values, or a copy into `out`, whose
  // size must equal numel().
  std::vector<float> to_f32(const std::string& source) const;
  void copy_f32_to(std::span<float> out, const std::string& source) const;
};

struct SafetensorsFile {
  std::string source;                  // the path it was read from
  SafetensorsMetadata metadata;
  std::vector<SafetensorsTensor> tensors;  // in data order
  const SafetensorsTensor* find(std::string_view name) const;
  const SafetensorsTensor& at(std::string_view name) const;  // InputError naming the file and the tensor
};

// The header text for `tensors` laid out in the given order (padded; without the 8-byte length).
std::string safetensors_header(std::span<const SafetensorsView> tensors, const SafetensorsMetadata& metadata);
// The whole file in memory (small files, tests).
std::vector<std::byte> safetensors_serialize(std::span<const SafetensorsView> tensors,
                                             const SafetensorsMetadata& metadata);
// Write `path` atomically (temp file, fsync, rename, fsync dir). Throws InputError on duplicate or empty
// names, a "__metadata__" tensor name, a data size that does not match dtype × shape, or an I/O failure.
void write_safetensors(const std::string& path, std::span<const SafetensorsView> tensors,
                       const SafetensorsMetadata& metadata = {});

// Parse in-memory bytes; `source` names them in errors.
SafetensorsFile parse_safetensors(std::span<const std::byte> bytes, const std::string& source);
// Read and validate a file.
SafetensorsFile read_safetensors(const std::string& path);

}  // namespace ptsim::runtime
