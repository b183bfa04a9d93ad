// tests/runtime/test_safetensors.cpp — safetensors bytes match the format spec; reading validates.
#include <doctest/doctest.h>
#include <unistd.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "tests/support/temp_dir.hpp"
#include "runtime/checkpoint/safetensors.hpp"

using ptsim::core::InputError;
using namespace ptsim::runtime;
namespace fs = std::filesystem;

namespace {

struct TempDir : ptsim::test::TempDir {
  TempDir() : ptsim::test::TempDir("st") {}
};

std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}

void write_bytes(const fs::path& p, const std::vector<std::byte>& b) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

std::vector<std::byte> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return bytes_of(s);
}

// A file from a literal header (unpadded: padding is optional for readers) and raw data bytes.
std::vector<std::byte> hand_file(const std::string& header, const std::vector<std::byte>& data) {
  std::vector<std::byte> out(8);
  uint64_t n = header.size();
  for (int k = 0; k < 8; ++k) out[k] = static_cast<std::byte>((n >> (8 * k)) & 0xff);
  const auto h = bytes_of(header);
  out.insert(out.end(), h.begin(), h.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::vector<std::byte> zeros(std::size_t n) { return std::vector<std::byte>(n, std::byte{0}); }

}  // namespace

TEST_CASE("a one-tensor file is byte-for-byte what the format spec says") {
  const float values[] = {1.0f, 2.0f};
  const SafetensorsView views[] = {safetensors_f32_view("a", values)};
  const std::vector<std::byte> got = safetensors_serialize(views, {});
  // Header JSON (54 bytes): {"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}
  // padded with 2 spaces to 56 so the data starts at 8 + 56 = 64, a multiple of 8;
  // length prefix 56 = 0x38 as u64 little-endian; data: 1.0f = 0x3F800000, 2.0f = 0x40000000, little-endian.
  std::vector<std::byte> want = {std::byte{0x38}, std::byte{0}, std::byte{0}, std::byte{0},
                                 std::byte{0},    std::byte{0}, std::byte{0}, std::byte{0}};
  const auto header = bytes_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}  )");
  want.insert(want.end(), header.begin(), header.end());
  for (uint8_t b : {0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x00, 0x40}) want.push_back(std::byte{b});
  REQUIRE(got.size() == 72);
  CHECK(got == want);

  // With metadata, "__metadata__" comes first (as the reference writer emits it).
  const std::string h = safetensors_header(views, {{"step", "7"}});
  CHECK(h.rfind(R"({"__metadata__":{"step":"7"},"a":)", 0) == 0);
  CHECK(h.size() % 8 == 0);
}

TEST_CASE("round trip: several dtypes, shapes, empty and scalar tensors, metadata") {
  TempDir dir;
  const fs::path p = dir.path / "t.safetensors";
  const std::vector<float> w = {0.5f, -1.25f, 3.0e-38f, -0.0f, 1.0e30f, 7.0f};
  const std::vector<int64_t> ids = {1, -2, 1LL << 40};
  const std::vector<uint16_t> bf = {0x3F80, 0xC000, 0x0001};  // raw BF16 bit patterns
  const int32_t scalar = 42;
  const std::vector<std::byte> none;
  const SafetensorsView views[] = {
      safetensors_f32_view("layer.0.w", w, {2, 3}),
      {"ids", SafetensorsDtype::i64, {3}, std::as_bytes(std::span(ids))},
      {"half", SafetensorsDtype::bf16, {3}, std::as_bytes(std::span(bf))},
      {"empty", SafetensorsDtype::f32, {0, 4}, none},
      {"scalar", SafetensorsDtype::i32, {}, std::as_bytes(std::span(&scalar, 1))},
  };
  write_safetensors(p.string(), views, {{"format", "test"}, {"step", "12"}});
  CHECK_FALSE(fs::exists(p.string() + ".tmp." + std::to_string(::getpid())));  // temp file renamed away

  const SafetensorsFile f = read_safetensors(p.string());
  CHECK(f.metadata.at("format") == "test");
  CHECK(f.metadata.at("step") == "12");
  REQUIRE(f.tensors.size() == 5);
  const SafetensorsTensor& t = f.at("layer.0.w");
  CHECK(t.shape == std::vector<int64_t>{2, 3});
  const std::vector<float> back = t.to_f32(f.source);
  CHECK(std::memcmp(back.data(), w.data(), w.size() * sizeof(float)) == 0);
  CHECK(f.at("ids").dtype == SafetensorsDtype::i64);
  CHECK(std::memcmp(f.at("ids").data.data(), ids.data(), 24) == 0);
  CHECK(f.at("half").dtype == SafetensorsDtype::bf16);
  CHECK(f.at("half").data.size() == 6);
  CHECK(std::memcmp(f.at("half").data.data(), bf.data(), 6) == 0);
  CHECK(f.at("empty").numel() == 0);
  CHECK(f.at("scalar").shape.empty());
  CHECK(f.at("scalar").numel() == 1);
  CHECK_THROWS_WITH_AS(f.at("ids").to_f32(f.source), doctest::Contains("tensor 'ids' is I64, expected F32"), InputError);
  CHECK_THROWS_WITH_AS(f.at("nope"), doctest::Contains("no tensor named 'nope'"), InputError);
  // The file and its in-memory parse agree.
  const SafetensorsFile g = parse_safetensors(read_bytes(p), "mem");
  CHECK(g.tensors.size() == 5);
}

TEST_CASE("writing rejects inconsistent tensors") {
  TempDir dir;
  const float v[] = {1.0f, 2.0f, 3.0f};
  const SafetensorsView wrong_size[] = {safetensors_f32_view("x", v, {2, 2})};
  CHECK_THROWS_WITH_AS(write_safetensors((dir.path / "a.safetensors").string(), wrong_size),
                       doctest::Contains("tensor 'x': F32 × shape [2, 2] needs 16 bytes, got 12"), InputError);
  const SafetensorsView dup[] = {safetensors_f32_view("x", v), safetensors_f32_view("x", v)};
  CHECK_THROWS_WITH_AS(write_safetensors((dir.path / "b.safetensors").string(), dup),
                       doctest::Contains("'x' appears twice"), InputError);
  CHECK_FALSE(fs::exists(dir.path / "a.safetensors"));
}

TEST_CASE("corrupt and truncated files give errors naming the file and the tensor") {
  TempDir dir;
  const fs::path p = dir.path / "bad.safetensors";
  auto read_error = [&](const std::vector<std::byte>& file) -> std::string {
    write_bytes(p, file);
    try {
      read_safetensors(p.string());
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  };
  const std::string ps = p.string();

  // A good file minus its last byte: tensor 'a' now runs past the data.
  const float values[] = {1.0f, 2.0f};
  const SafetensorsView views[] = {safetensors_f32_view("a", values)};
  std::vector<std::byte> good = safetensors_serialize(views, {});
  std::vector<std::byte> truncated(good.begin(), good.end() - 1);
  std::string msg = read_error(truncated);
  CHECK(msg.find(ps) != std::string::npos);
  CHECK(msg.find("tensor 'a'") != std::string::npos);
  CHECK(msg.find("truncated") != std::string::npos);

  // Truncated inside the header / before the length prefix ends.
  msg = read_error(std::vector<std::byte>(good.begin(), good.begin() + 20));
  CHECK(msg.find("header length 56 exceeds the 12 bytes") != std::string::npos);
  msg = read_error(std::vector<std::byte>(good.begin(), good.begin() + 5));
  CHECK(msg.find("5 bytes is too short") != std::string::npos);

  // A trailing byte that belongs to no tensor.
  std::vector<std::byte> longer = good;
  longer.push_back(std::byte{0});
  CHECK(read_error(longer).find("1 data bytes after the last tensor") != std::string::npos);

  // Overlapping tensors.
  msg = read_error(hand_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                             zeros(12)));
  CHECK(msg.find("tensor 'b' (bytes [4, 12)) overlaps tensor 'a'") != std::string::npos);

  // A hole between tensors.
  msg = read_error(hand_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                             R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                             zeros(12)));
  CHECK(msg.find("data bytes [4, 8) before tensor 'b' belong to no tensor") != std::string::npos);

  // dtype × shape disagrees with the offsets.
  msg = read_error(hand_file(R"({"w":{"dtype":"F16","shape":[3],"data_offsets":[0,8]}})", zeros(8)));
  CHECK(msg.find("tensor 'w': F16 × shape [3] needs 6 bytes but data_offsets [0, 8] hold 8") != std::string::npos);

  // Unknown dtype, bad shape, reversed offsets, missing field, unknown field.
  CHECK(read_error(hand_file(R"({"w":{"dtype":"F17","shape":[1],"data_offsets":[0,4]}})", zeros(4)))
            .find("tensor 'w': unknown dtype 'F17'") != std::string::npos);
  CHECK(read_error(hand_file(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", zeros(4)))
            .find("shape entries must be non-negative integers") != std::string::npos);
  CHECK(read_error(hand_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", zeros(4)))
            .find("end before they begin") != std::string::npos);
  CHECK(read_error(hand_file(R"({"w":{"dtype":"F32","shape":[1]}})", zeros(4)))
            .find("tensor 'w': field 'data_offsets' is missing") != std::string::npos);
  CHECK(read_error(hand_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}})", zeros(4)))
            .find("unknown field 'x'") != std::string::npos);

  // Not JSON, not an object, duplicate names, non-string metadata.
  CHECK(read_error(hand_file("{\"w\":", {})).find("not valid JSON") != std::string::npos);
  CHECK(read_error(hand_file("[1, 2]", {})).find("does not start with '{'") != std::string::npos);
  CHECK(read_error(hand_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                             R"("w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                             zeros(8)))
            .find("repeats the key 'w'") != std::string::npos);
  CHECK(read_error(hand_file(R"({"__metadata__":{"step":3}})", {})).find("'__metadata__' entry 'step' must be a string")
        != std::string::npos);
  // An absurd header length is refused before any allocation.
  std::vector<std::byte> huge = good;
  huge[5] = std::byte{0x10};
  CHECK(read_error(huge).find("exceeds the 100000000-byte limit") != std::string::npos);

  // A missing file.
  CHECK_THROWS_WITH_AS(read_safetensors((dir.path / "missing.safetensors").string()),
                       doctest::Contains("cannot open safetensors file"), InputError);
}
