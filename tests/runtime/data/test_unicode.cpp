// tests/runtime/data/test_unicode.cpp — the Unicode layer of the BERT tokenizer (runtime/data/unicode_text.*)
// against three references: hand-applied rules of CPython's str.lower() and BERT's tokenization.py (each case
// names its rule), Unicode's own NormalizationTest.txt (Debian's unicode-data) for NFD, and — live — BERT's
// BasicTokenizer in Python (tests/runtime/data/reference_basic_tokenizer.py) over every assigned code point.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/data/tokenizer.hpp"
#include "runtime/data/unicode_text.hpp"
#include "tests/support/run_command.hpp"

using namespace ptsim::runtime::data;
using Tokens = std::vector<std::string>;

namespace {

Tokens basic(const std::string& text) { return BasicTokenizer{}.tokenize(text); }

// "0044 030C" -> U"\u0044\u030C" (NormalizationTest.txt's field format).
std::u32string parse_code_points(const std::string& field) {
  std::u32string out;
  std::istringstream in(field);
  std::string hex;
  while (in >> hex) out.push_back(static_cast<char32_t>(std::stoul(hex, nullptr, 16)));
  return out;
}

// Calls on_line for each line of `text`.
template <typename OnLine>
void for_each_line(const std::string& text, OnLine on_line) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) on_line(line);
}

std::string project_root() {
  const char* root = std::getenv("PTSIM_ROOT");
  REQUIRE_MESSAGE(root != nullptr, "PTSIM_ROOT is not set (meson test sets it)");
  return root;
}

}  // namespace

TEST_CASE("str.lower(): final sigma as CPython decides it (cased letter before, none after; case-ignorables skipped)") {
  CHECK(python_lower(U"ΟΔΟΣ") == U"οδος");   // word end after a cased letter: ς
  CHECK(python_lower(U"ΣΑ") == U"σα");       // nothing cased before: σ
  CHECK(python_lower(U"ΑΣΑ") == U"ασα");     // a cased letter follows: σ
  CHECK(python_lower(U"Σ") == U"σ");         // alone: σ
  CHECK(python_lower(U"ΑΣ.") == U"ας.");     // '.' is Case_Ignorable (MidNumLet) and ends the word: ς
  CHECK(python_lower(U"ΑΣ'Α") == U"ασ'α");   // the apostrophe is skipped, a cased letter follows: σ
  CHECK(python_lower(U"ΑΣ,Α") == U"ας,α");   // ',' is not Case_Ignorable: the scan stops there, ς
  CHECK(python_lower(U"Α\u0301Σ") == U"α\u0301ς");  // a combining mark (Mn) before Σ is skipped
  CHECK(python_lower(U"\u0130") == U"i\u0307");     // SpecialCasing.txt: İ -> i + combining dot above
}

TEST_CASE("BERT uncased over scripts the old hand-written tables did not cover") {
  CHECK(basic("ԱՐԱՐԱՏ") == Tokens{"արարատ"});                 // Armenian capitals (Lu -> Ll)
  CHECK(basic("Tiếng Việt") == Tokens{"tieng", "viet"});        // Vietnamese: stacked diacritics, NFD drops both
  CHECK(basic("ἌΝΘΡΩΠΟΣ") == Tokens{"ανθρωπος"});               // polytonic Greek + final sigma
  CHECK(basic("Ⴀ") == Tokens{"ⴀ"});                            // Georgian Asomtavruli U+10A0 -> Nuskhuri U+2D00
  CHECK(basic("हिन्दी") == Tokens{"हिनदी"});                       // Devanagari: virama U+094D (Mn) dropped, vowel signs (Mc) kept
  CHECK(basic("한국") == Tokens{"\u1112\u1161\u11ab\u1100\u116e\u11a8"});  // Hangul syllables -> conjoining jamo (NFD)
  CHECK(basic("ሰላም፡ዓለም") == Tokens{"ሰላም", "፡", "ዓለም"});       // Ethiopic wordspace U+1361 is Po: a token
  CHECK(basic("ក។ខ") == Tokens{"ក", "។", "ខ"});                   // Khmer sign khan U+17D4 (Po)
  CHECK(basic("a\u1680b\u205Fc") == Tokens{"a", "b", "c"});      // Ogham space mark, medium mathematical space (Zs)
  CHECK(basic("x\U000E0001y\U0001D173z") == Tokens{"xyz"});      // language tag, musical begin-beam (Cf): dropped
}

TEST_CASE("nfd: decomposition and canonical ordering (Unicode 15 UnicodeData.txt)") {
  CHECK(nfd(U"\u1E69") == U"s\u0323\u0307");   // ṩ: s, dot below (ccc 220), dot above (ccc 230)
  CHECK(nfd(U"a\u0301\u0323") == U"a\u0323\u0301");  // reordered: ccc 220 before 230
  CHECK(nfd(U"\uAC00") == U"\u1100\u1161");    // Hangul LV syllable
  CHECK(nfd(U"\u212B") == U"A\u030A");         // Angstrom sign: singleton to Å, then decomposed
  CHECK(nfd(U"\uFB01") == U"\uFB01");          // ﬁ has only a compatibility decomposition: NFD keeps it
  CHECK(strip_accents(U"Ångström") == U"Angstrom");
}

TEST_CASE("nfd equals Unicode's NormalizationTest.txt (c3 = NFD(c1) = NFD(c2) = NFD(c3), c5 = NFD(c4) = NFD(c5))") {
  // Debian's unicode-data (tools/bootstrap.sh) ships it bz2-compressed; Python (which meson needs) reads it.
  const std::string path = "/usr/share/unicode/NormalizationTest.txt.bz2";
  REQUIRE_MESSAGE(std::ifstream(path).good(), path << " is missing: install Debian's unicode-data (tools/bootstrap.sh does)");
  int checked = 0, failures = 0;
  const auto file = ptsim::test::run_command(
      fmt::format("python3 -c \"import bz2,sys; sys.stdout.buffer.write(bz2.open(sys.argv[1]).read())\" '{}'", path));
  for_each_line(file.output, [&](const std::string& line) {
    if (line.empty() || line[0] == '#' || line[0] == '@') return;
    std::vector<std::u32string> c;
    std::istringstream fields(line);
    std::string field;
    for (int i = 0; i < 5 && std::getline(fields, field, ';'); ++i) c.push_back(parse_code_points(field));
    REQUIRE(c.size() == 5);
    const bool ok = nfd(c[0]) == c[2] && nfd(c[1]) == c[2] && nfd(c[2]) == c[2] && nfd(c[3]) == c[4] &&
                    nfd(c[4]) == c[4];
    if (!ok && ++failures <= 5) MESSAGE("NFD differs on: " << line);
    ++checked;
  });
  CHECK(file.exit_code == 0);
  CHECK(failures == 0);
  CHECK(checked > 19000);  // Unicode 15's file has 19,000+ test lines; fewer means it was not read
}

TEST_CASE("every assigned code point tokenizes as BERT's BasicTokenizer in Python (unicodedata) does") {
  // Python ships with meson, so python3 is present wherever this project builds.
  const std::string command = fmt::format(
      "python3 '{}/tests/runtime/data/reference_basic_tokenizer.py' --every-code-point", project_root());
  int compared = 0, differing = 0;
  std::vector<std::string> examples;
  const auto reference = ptsim::test::run_command(command);
  for_each_line(reference.output, [&](const std::string& line) {
    const auto row = nlohmann::json::parse(line);
    if (!row.contains("cp")) return;  // the header line with Python's Unicode version
    const Tokens expected = row.at("out").get<Tokens>();
    const Tokens actual = basic(row.at("in").get<std::string>());
    ++compared;
    if (actual != expected && ++differing <= 8)
      examples.push_back(fmt::format("U+{:04X}: ptsim [{}] vs Python [{}]", row.at("cp").get<uint32_t>(),
                                     fmt::join(actual, " "), fmt::join(expected, " ")));
  });
  CHECK(reference.exit_code == 0);
  for (const auto& e : examples) MESSAGE(e);
  // Python 3.11's unicodedata is Unicode 14, utf8proc's is 15: the script lists only code points assigned in
  // 14, and no code point's category, lower-casing or decomposition that BERT reads changed from 14 to 15.
  CHECK(differing == 0);
  CHECK(compared > 60000);  // ~64,000 rows (every assigned non-CJK code point + 1 in 64 CJK ideographs)
}
