// tests/runtime/data/test_tokenizer.cpp — BasicTokenizer + WordPiece against hand-written expectations.
// Expected tokens come from BERT's tokenization_test.py where a case is taken from it (marked), and
// otherwise from applying tokenization.py's rules by hand (the rule is named in each case).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "runtime/data/tokenizer.hpp"
#include "runtime/data/unicode_text.hpp"
#include "data_test_support.hpp"

using namespace ptsim::runtime::data;
using Tokens = std::vector<std::string>;

namespace {

Tokens basic(const std::string& text, bool lower = true) {
  BasicTokenizer b;
  b.do_lower_case = lower;
  return b.tokenize(text);
}

Vocab hand_vocab() {
  return Vocab::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "want", "##want", "##ed", "wa", "un", "runn",
                             "##ing", ",", "##aff", "##able", "don", "'", "t", "hello", "a", "##a", "\xE4\xBD\xA0",
                             "\xE5\xA5\xBD", "caf", "##e", "ah", "zz", "\xE5\x8D\x9A", "\xE6\x8E\xA8"});
}

}  // namespace

TEST_CASE("BasicTokenizer lower-cases, splits punctuation and whitespace (tokenization_test.py)") {
  CHECK(basic(" \tHeLLo!how  \n Are yoU?  ") == Tokens{"hello", "!", "how", "are", "you", "?"});
  CHECK(basic("H\xC3\xA9llo") == Tokens{"hello"});                                      // "Héllo"
  CHECK(basic(" \tH\xC3\xA4LLo!how  \n Are yoU?  ") == Tokens{"hallo", "!", "how", "are", "you", "?"});  // "HäLLo"
  CHECK(basic(" \tHeLLo!how  \n Are yoU?  ", false) == Tokens{"HeLLo", "!", "how", "Are", "yoU", "?"});
}

TEST_CASE("punctuation splits inside words; ASCII symbol ranges count as punctuation") {
  CHECK(basic("don't") == Tokens{"don", "'", "t"});
  CHECK(basic("e-mail: a@b.c") == Tokens{"e", "-", "mail", ":", "a", "@", "b", ".", "c"});
  CHECK(basic("$5+x=y^2") == Tokens{"$", "5", "+", "x", "=", "y", "^", "2"});  // 33-47, 58-64, 91-96 ranges
  CHECK(basic("...") == Tokens{".", ".", "."});
  // Unicode P*: curly quotes (Pi/Pf), em dash (Pd), inverted marks, guillemets.
  CHECK(basic("\xE2\x80\x9CQuoted\xE2\x80\x9D \xE2\x80\x94 \xC2\xBFs\xC3\xAD? \xC2\xABoui\xC2\xBB") ==
        Tokens{"\xE2\x80\x9C", "quoted", "\xE2\x80\x9D", "\xE2\x80\x94", "\xC2\xBF", "si", "?", "\xC2\xAB", "oui", "\xC2\xBB"});
  CHECK(basic("\xEF\xBC\x81") == Tokens{"\xEF\xBC\x81"});  // fullwidth '!'
}

TEST_CASE("accents are stripped via NFD for Latin-1, Latin Extended-A and Greek tonos") {
  CHECK(basic("Caf\xC3\xA9 Cr\xC3\xA8me Br\xC3\xBBl\xC3\xA9" "e") == Tokens{"cafe", "creme", "brulee"});
  CHECK(basic("\xC3\x85ngstr\xC3\xB6m") == Tokens{"angstrom"});                      // Ångström
  CHECK(basic("Na\xC3\xAFve \xC3\x91" "and\xC3\xBA") == Tokens{"naive", "nandu"});   // Naïve Ñandú
  // Łódź: Ł has no canonical decomposition (stays, lower-cased to ł); ó -> o; ź -> z.
  CHECK(basic("\xC5\x81\xC3\xB3" "d\xC5\xBA") == Tokens{"\xC5\x82odz"});
  CHECK(basic("\xC5\x92uvre Stra\xC3\x9F" "e") == Tokens{"\xC5\x93uvre", "stra\xC3\x9F" "e"});  // Œ, ß kept
  CHECK(basic("\xC4\xB0stanbul") == Tokens{"istanbul"});                             // İ -> i̇ -> i
  CHECK(basic("\xCE\x86\xCE\xBB\xCF\x86\xCE\xB1") == Tokens{"\xCE\xB1\xCE\xBB\xCF\x86\xCE\xB1"});  // Άλφα -> αλφα
  CHECK(basic("\xD0\x9F\xD0\xA0\xD0\x98") == Tokens{"\xD0\xBF\xD1\x80\xD0\xB8"});   // ПРИ -> при
  CHECK(basic("\xD0\x81\xD0\x96\xD0\x98\xD0\x99") == Tokens{"\xD0\xB5\xD0\xB6\xD0\xB8\xD0\xB8"});  // ЁЖИЙ -> ежии
  CHECK(basic("\xEF\xBC\xA1\xEF\xBC\xA2") == Tokens{"\xEF\xBD\x81\xEF\xBD\x82"});  // fullwidth ＡＢ -> ａｂ
  CHECK(basic("e\xCC\x81te\xCC\x81") == Tokens{"ete"});                             // decomposed é: U+0301 (Mn) dropped
  // Without lower-casing BERT strips nothing.
  CHECK(basic("Caf\xC3\xA9", false) == Tokens{"Caf\xC3\xA9"});
}

TEST_CASE("CJK ideographs become single tokens; kana and hangul do not (BERT's _is_chinese_char ranges)") {
  CHECK(basic("ah\xE5\x8D\x9A\xE6\x8E\xA8zz") == Tokens{"ah", "\xE5\x8D\x9A", "\xE6\x8E\xA8", "zz"});  // tokenization_test.py
  CHECK(basic("\xE4\xBD\xA0\xE5\xA5\xBD\xE3\x80\x82") == Tokens{"\xE4\xBD\xA0", "\xE5\xA5\xBD", "\xE3\x80\x82"});  // 你好。
  CHECK(basic("\xE3\x81\x8B\xE3\x81\xAA") == Tokens{"\xE3\x81\x8B\xE3\x81\xAA"});   // かな stays one word
  CHECK(basic("\xF0\xA0\x80\x80x") == Tokens{"\xF0\xA0\x80\x80", "x"});             // U+20000 (Extension B)
}

TEST_CASE("control characters, NUL, U+FFFD and zero-width format characters are dropped; exotic spaces split") {
  CHECK(basic(std::string("hel\x01lo\x7f wor\0ld", 14)) == Tokens{"hello", "world"});
  CHECK(basic("a\xEF\xBF\xBD" "b") == Tokens{"ab"});                   // U+FFFD
  CHECK(basic("foo\xE2\x80\x8B" "bar\xC2\xAD" "baz") == Tokens{"foobarbaz"});  // U+200B, soft hyphen (Cf)
  CHECK(basic("a\xC2\xA0" "b\xE3\x80\x80" "c\xE2\x80\xA8" "d\te\r\nf") == Tokens{"a", "b", "c", "d", "e", "f"});
  CHECK(basic("\xEF\xBB\xBFstart") == Tokens{"start"});                // BOM
  CHECK(basic("") == Tokens{});
  CHECK(basic(" \t\n ") == Tokens{});
}

TEST_CASE("invalid UTF-8 never crashes: bad bytes become U+FFFD and are dropped") {
  CHECK(utf8_decode("a\xFF" "b") == std::u32string{U'a', kReplacementChar, U'b'});
  CHECK(basic("ab\xFF\xFE" "cd") == Tokens{"abcd"});
  CHECK(basic("ab\xE4\xB8") == Tokens{"ab"});                            // truncated 3-byte sequence at the end
  CHECK(basic("x\xC0\xAFy") == Tokens{"xy"});                            // overlong '/'
  CHECK(basic("x\xED\xA0\x80y") == Tokens{"xy"});                        // encoded surrogate U+D800
  CHECK(basic("x\xF4\x90\x80\x80y") == Tokens{"xy"});                    // > U+10FFFF
  CHECK(basic("\x80\x80\x80") == Tokens{});                              // lone continuation bytes
  CHECK(utf8_encode(utf8_decode("h\xC3\xA9\xE4\xBD\xA0\xF0\x9F\x98\x80")) == "h\xC3\xA9\xE4\xBD\xA0\xF0\x9F\x98\x80");
}

TEST_CASE("WordPiece: greedy longest match with ## continuations (tokenization_test.py + unaffable)") {
  const Vocab v = hand_vocab();
  const FullTokenizer tok(v);
  CHECK(tok.tokenize("") == Tokens{});
  CHECK(tok.tokenize("unwanted running") == Tokens{"un", "##want", "##ed", "runn", "##ing"});
  CHECK(tok.tokenize("unwantedX running") == Tokens{"[UNK]", "runn", "##ing"});  // X has no piece: whole word [UNK]
  CHECK(tok.tokenize("UNwant\xC3\xA9" "d,running") == Tokens{"un", "##want", "##ed", ",", "runn", "##ing"});
  CHECK(tok.tokenize("unaffable") == Tokens{"un", "##aff", "##able"});
  CHECK(tok.tokenize("Don't") == Tokens{"don", "'", "t"});
  CHECK(tok.tokenize("Caf\xC3\xA9 hello") == Tokens{"caf", "##e", "hello"});
  CHECK(tok.tokenize("\xE4\xBD\xA0\xE5\xA5\xBD") == Tokens{"\xE4\xBD\xA0", "\xE5\xA5\xBD"});
  CHECK(tok.tokenize("ah\xE5\x8D\x9A\xE6\x8E\xA8zz") == Tokens{"ah", "\xE5\x8D\x9A", "\xE6\x8E\xA8", "zz"});
}

TEST_CASE("WordPiece: words over 100 characters are [UNK]; exactly 100 is tokenized") {
  const Vocab v = hand_vocab();
  const FullTokenizer tok(v);
  const Tokens at_limit = tok.tokenize(std::string(100, 'a'));
  REQUIRE(at_limit.size() == 100);  // "a" then 99 x "##a" (no longer pieces in the vocab)
  CHECK(at_limit.front() == "a");
  CHECK(at_limit.back() == "##a");
  CHECK(tok.tokenize(std::string(101, 'a')) == Tokens{"[UNK]"});
  CHECK(tok.tokenize(std::string(101, 'a') + " hello") == Tokens{"[UNK]", "hello"});
}

TEST_CASE("Vocab: ids are line numbers, special ids looked up by token, hash over the file bytes") {
  auto dir = ptsim::test::fresh_temp_dir("vocab_load");
  // Google's layout: [PAD]=0, [unused0]=1, ..., [UNK]=100 etc. Here a short stand-in with CRLF endings.
  std::string text = "[PAD]\r\n[unused0]\r\n[UNK]\r\n[CLS]\r\n[SEP]\r\n[MASK]\r\nthe\r\n##s\r\n";
  ptsim::test::write_text(dir / "vocab.txt", text);
  const Vocab v = Vocab::load((dir / "vocab.txt").string());
  CHECK(v.size() == 8);
  CHECK(v.pad_id() == 0);
  CHECK(v.unk_id() == 2);
  CHECK(v.cls_id() == 3);
  CHECK(v.sep_id() == 4);
  CHECK(v.mask_id() == 5);
  CHECK(v.find("##s") == 7);
  CHECK(v.find("nope") == -1);
  CHECK(v.hash() == fnv1a64(text.data(), text.size()));
  // FNV-1a 64 reference values: "" -> offset basis; "a" -> 0xaf63dc4c8601ec8c (published test vector).
  CHECK(fnv1a64("", 0) == 0xcbf29ce484222325ULL);
  CHECK(fnv1a64("a", 1) == 0xaf63dc4c8601ec8cULL);
}

TEST_CASE("Vocab errors: missing file, missing special tokens (named)") {
  auto dir = ptsim::test::fresh_temp_dir("vocab_errors");
  CHECK_THROWS_WITH_AS(Vocab::load((dir / "nope.txt").string()), doctest::Contains("nope.txt' cannot be opened"),
                       ptsim::core::InputError);
  ptsim::test::write_text(dir / "v.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n");
  CHECK_THROWS_WITH_AS(Vocab::load((dir / "v.txt").string()), doctest::Contains("lacks the special token(s) [MASK]"),
                       ptsim::core::InputError);
  ptsim::test::write_text(dir / "empty.txt", "");
  CHECK_THROWS_AS(Vocab::load((dir / "empty.txt").string()), ptsim::core::InputError);
}
