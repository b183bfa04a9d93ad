// runtime/data/unicode_text.hpp — the Unicode that BERT's BasicTokenizer needs, over utf8proc.
// Is: a UTF-8 decoder/encoder that never throws (invalid bytes become U+FFFD); the character classes of
// BERT's tokenization.py (whitespace, control, punctuation, CJK ideograph, non-spacing mark) from the
// Unicode general categories; Python's str.lower() (full lower-case mapping, final sigma) and NFD — the
// Unicode data of the utf8proc library (Debian's libutf8proc: Unicode 15), for every script.
// Is not: a general text library (no NFC/NFKC, no case folding beyond str.lower(), no segmentation).
// See docs/data-pipeline.md ("Unicode") for the rules and how they are checked against Python.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ptsim::runtime::data {

inline constexpr char32_t kReplacementChar = 0xFFFD;

// Decode UTF-8. Each maximal invalid subsequence (stray continuation byte, truncated sequence,
// overlong form, surrogate, > U+10FFFF) becomes one U+FFFD; decoding then resumes at the next byte.
std::u32string utf8_decode(std::string_view bytes);
// Append the UTF-8 form of `cp` to `out` (cp must be a valid scalar value; others become U+FFFD).
void utf8_append(std::string& out, char32_t cp);
std::string utf8_encode(std::u32string_view text);

// BERT's _is_whitespace: \t \n \r, space and category Zs; plus Zl/Zp (U+2028/U+2029), on which Python's
// str.split() — BERT's whitespace_tokenize — also splits.
bool is_whitespace(char32_t cp);
// BERT's _is_control: categories Cc and Cf, except \t \n \r (which are whitespace).
bool is_control(char32_t cp);
// BERT's _is_punctuation: ASCII 33-47, 58-64, 91-96, 123-126 (so $ + < = > ^ ` | ~ count, as in BERT),
// and every code point of a P* category (Pc Pd Ps Pe Pi Pf Po).
bool is_punctuation(char32_t cp);
// The exact CJK Unified Ideograph ranges of BERT's _is_chinese_char (not Hangul, Hiragana, Katakana).
bool is_cjk_ideograph(char32_t cp);
// Category Mn, which BERT's _run_strip_accents drops after NFD.
bool is_nonspacing_mark(char32_t cp);

// Python's str.lower() of a whole token: the full lower-case mapping (U+0130 İ -> "i̇", every other
// code point its simple mapping) and the Final_Sigma rule (Σ -> ς when a cased letter precedes it and none
// follows, case-ignorable characters skipped; Cased and Case_Ignorable as Unicode 15 defines them).
std::u32string python_lower(std::u32string_view text);
// Canonical decomposition (Unicode NFD), as Python's unicodedata.normalize("NFD", ...).
std::u32string nfd(std::u32string_view text);
// BERT's _run_strip_accents: NFD, then drop every Mn code point.
std::u32string strip_accents(std::u32string_view text);

}  // namespace ptsim::runtime::data
