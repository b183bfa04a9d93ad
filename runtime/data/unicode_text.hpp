// runtime/data/unicode_text.hpp — the small slice of Unicode that BERT's BasicTokenizer needs.
// Is: a UTF-8 decoder/encoder that never throws (invalid bytes become U+FFFD), and character-class
// tests (whitespace, control, punctuation, CJK ideograph, combining mark), lower-casing and accent
// stripping over hand-written tables.
// Is not: a Unicode library. Coverage is stated per function; characters outside the tables are
// treated as "ordinary letters" (kept, not lower-cased, not split) — see docs/data-pipeline.md.
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

// Python's str.isspace()-style whitespace BERT uses: \t \n \r, space and the Zs category
// (U+00A0, U+1680, U+2000..U+200A, U+202F, U+205F, U+3000) plus U+2028/U+2029 (line/paragraph separators,
// which Python's str.split() also splits on).
bool is_whitespace(char32_t cp);
// BERT's _is_control: categories Cc and Cf, except \t \n \r (which are whitespace).
// Cf coverage: U+00AD, U+0600..0605, U+061C, U+06DD, U+070F, U+180E, U+200B..200F, U+202A..202E,
// U+2060..2064, U+2066..206F, U+FEFF, U+FFF9..FFFB, U+E0001, U+E0020..E007F.
bool is_control(char32_t cp);
// BERT's _is_punctuation: ASCII 33-47, 58-64, 91-96, 123-126 (so $ + < = > ^ ` | ~ count, as in BERT),
// plus the P* categories of Latin-1, Greek, Armenian, Hebrew, Arabic, Devanagari, General Punctuation
// (U+2010..205E), Supplemental Punctuation (U+2E00..2E4F), CJK Symbols and Punctuation, Fullwidth forms.
bool is_punctuation(char32_t cp);
// The exact CJK Unified Ideograph ranges of BERT's _is_chinese_char (not Hangul, Hiragana, Katakana).
bool is_cjk_ideograph(char32_t cp);
// Category Mn over the combining-mark blocks U+0300..036F, U+1AB0..1AFF, U+1DC0..1DFF, U+20D0..20DC,
// U+20E1, U+20E5..20F0, U+FE20..FE2F, U+302A..302D.
bool is_combining_mark(char32_t cp);

// Python str.lower() for ASCII, Latin-1 Supplement, Latin Extended-A, basic Greek, Cyrillic U+0400..042F
// and fullwidth Latin;
// any other code point is returned unchanged. (U+0130 'İ' lowers to "i̇" in Python; after accent
// stripping that is "i", which is what lower_then_strip_accent returns for it.)
char32_t to_lower(char32_t cp);
// NFD-then-drop-Mn for one precomposed letter of Latin-1 Supplement (U+00C0..00FF) and Latin
// Extended-A (U+0100..017F), the Greek tonos/dialytika vowels and singletons (U+037E, 0385, 0387), and
// the accented Cyrillic letters of U+0400..045F (ё -> е, й -> и, ...): returns the base letter, or `cp`
// itself when it has no canonical decomposition (æ, ø, ß, ð, þ, đ, ħ, ı, ĳ, ł, ŋ, œ, ŧ, ſ ...).
char32_t strip_accent(char32_t cp);

}  // namespace ptsim::runtime::data
