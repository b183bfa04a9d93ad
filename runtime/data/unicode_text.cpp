// runtime/data/unicode_text.cpp — UTF-8 codec, and BERT's character classes, str.lower() and NFD over
// utf8proc's Unicode tables. Sources: BERT tokenization.py (_is_whitespace, _is_control, _is_punctuation,
// _is_chinese_char, _run_strip_accents); CPython's str.lower() (Objects/unicodeobject.c: full lower-case
// mapping, handle_capital_sigma); Unicode 15 SpecialCasing.txt, PropList.txt (Other_Lowercase/Uppercase,
// for Cased), WordBreakProperty.txt (MidLetter, MidNumLet, Single_Quote, for Case_Ignorable).
#include "runtime/data/unicode_text.hpp"

#include <utf8proc.h>

#include <algorithm>
#include <iterator>
#include <utility>

namespace ptsim::runtime::data {

namespace {

bool in(char32_t cp, char32_t lo, char32_t hi) { return cp >= lo && cp <= hi; }

utf8proc_category_t category(char32_t cp) { return utf8proc_category(static_cast<utf8proc_int32_t>(cp)); }

// Other_Lowercase and Other_Uppercase (Unicode 15 PropList.txt), sorted: letters and symbols that are cased
// without being Lu/Ll/Lt (ª º, modifier letters ʰ.., Roman numerals Ⅰ ⅰ.., circled Ⓐ ⓐ.., squared 🄰..).
constexpr std::pair<char32_t, char32_t> kOtherCased[] = {
    {0x00AA, 0x00AA}, {0x00BA, 0x00BA}, {0x02B0, 0x02B8}, {0x02C0, 0x02C1}, {0x02E0, 0x02E4},
    {0x0345, 0x0345}, {0x037A, 0x037A}, {0x10FC, 0x10FC}, {0x1D2C, 0x1D6A}, {0x1D78, 0x1D78},
    {0x1D9B, 0x1DBF}, {0x2071, 0x2071}, {0x207F, 0x207F}, {0x2090, 0x209C}, {0x2160, 0x216F},
    {0x2170, 0x217F}, {0x24B6, 0x24CF}, {0x24D0, 0x24E9}, {0x2C7C, 0x2C7D}, {0xA69C, 0xA69D},
    {0xA770, 0xA770}, {0xA7F2, 0xA7F4}, {0xA7F8, 0xA7F9}, {0xAB5C, 0xAB5F}, {0xAB69, 0xAB69},
    {0x10780, 0x10780}, {0x10783, 0x10785}, {0x10787, 0x107B0}, {0x107B2, 0x107BA}, {0x1E030, 0x1E06D},
    {0x1F130, 0x1F149}, {0x1F150, 0x1F169}, {0x1F170, 0x1F189},
};

// Cased (Unicode DerivedCoreProperties.txt): Lu, Ll, Lt, Other_Lowercase, Other_Uppercase.
bool is_cased(char32_t cp) {
  const auto c = category(cp);
  if (c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT) return true;
  const auto* it = std::upper_bound(std::begin(kOtherCased), std::end(kOtherCased), cp,
                                    [](char32_t v, const auto& range) { return v < range.first; });
  return it != std::begin(kOtherCased) && cp <= std::prev(it)->second;
}

// Case_Ignorable (Unicode 15 DerivedCoreProperties): categories Mn Me Cf Lm Sk, and Word_Break
// MidLetter, MidNumLet and Single_Quote (WordBreakProperty.txt).
bool is_case_ignorable(char32_t cp) {
  switch (category(cp)) {
    case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_ME: case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_SK: return true;
    default: break;
  }
  switch (cp) {
    case 0x0027: case 0x002E: case 0x003A: case 0x00B7: case 0x0387: case 0x055F: case 0x05F4:
    case 0x2018: case 0x2019: case 0x2024: case 0x2027: case 0xFE13: case 0xFE52: case 0xFE55:
    case 0xFF07: case 0xFF0E: case 0xFF1A: return true;
    default: return false;
  }
}

// CPython's handle_capital_sigma: final form when a cased letter precedes (skipping case-ignorables) and
// no cased letter follows (skipping case-ignorables).
bool sigma_is_final(std::u32string_view text, size_t i) {
  size_t j = i;
  while (j > 0 && is_case_ignorable(text[j - 1])) --j;
  if (j == 0 || !is_cased(text[j - 1])) return false;
  size_t k = i + 1;
  while (k < text.size() && is_case_ignorable(text[k])) ++k;
  return k == text.size() || !is_cased(text[k]);
}

int combining_class(char32_t cp) {
  return cp < 0x300 ? 0 : utf8proc_get_property(static_cast<utf8proc_int32_t>(cp))->combining_class;
}

// The Canonical Ordering Algorithm (Unicode §3.11): each run of non-starters sorted stably by combining class.
void canonical_order(std::u32string& text) {
  for (size_t i = 1; i < text.size(); ++i) {
    const int ccc = combining_class(text[i]);
    if (ccc == 0) continue;
    size_t j = i;
    while (j > 0 && combining_class(text[j - 1]) > ccc) {
      std::swap(text[j - 1], text[j]);
      --j;
    }
  }
}

}  // namespace

std::u32string utf8_decode(std::string_view bytes) {
  std::u32string out;
  out.reserve(bytes.size());
  const auto* s = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  size_t i = 0;
  while (i < n) {
    unsigned char b0 = s[i];
    if (b0 < 0x80) {
      out.push_back(b0);
      ++i;
      continue;
    }
    int need = 0;
    char32_t cp = 0;
    char32_t min_cp = 0;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      need = 1, cp = b0 & 0x1F, min_cp = 0x80;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      need = 2, cp = b0 & 0x0F, min_cp = 0x800;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      need = 3, cp = b0 & 0x07, min_cp = 0x10000;
    } else {  // stray continuation byte, C0/C1 (always overlong) or F5..FF
      out.push_back(kReplacementChar);
      ++i;
      continue;
    }
    size_t j = i + 1;
    bool ok = true;
    for (int k = 0; k < need; ++k, ++j) {
      if (j >= n || (s[j] & 0xC0) != 0x80) {
        ok = false;
        break;
      }
      cp = (cp << 6) | (s[j] & 0x3F);
    }
    if (ok && (cp < min_cp || cp > 0x10FFFF || in(cp, 0xD800, 0xDFFF))) ok = false;
    if (!ok) {
      // One U+FFFD for the lead byte and the continuation bytes consumed so far; resume after them.
      out.push_back(kReplacementChar);
      i = (j > i + 1) ? j : i + 1;
      continue;
    }
    out.push_back(cp);
    i = j;
  }
  return out;
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp > 0x10FFFF || in(cp, 0xD800, 0xDFFF)) cp = kReplacementChar;
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string utf8_encode(std::u32string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char32_t cp : text) utf8_append(out, cp);
  return out;
}

bool is_whitespace(char32_t cp) {
  if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r') return true;
  const auto c = category(cp);
  return c == UTF8PROC_CATEGORY_ZS || c == UTF8PROC_CATEGORY_ZL || c == UTF8PROC_CATEGORY_ZP;
}

bool is_control(char32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  const auto c = category(cp);
  return c == UTF8PROC_CATEGORY_CC || c == UTF8PROC_CATEGORY_CF;
}

bool is_punctuation(char32_t cp) {
  if (in(cp, 33, 47) || in(cp, 58, 64) || in(cp, 91, 96) || in(cp, 123, 126)) return true;
  switch (category(cp)) {
    case UTF8PROC_CATEGORY_PC: case UTF8PROC_CATEGORY_PD: case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE: case UTF8PROC_CATEGORY_PI: case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO: return true;
    default: return false;
  }
}

bool is_cjk_ideograph(char32_t cp) {
  return in(cp, 0x4E00, 0x9FFF) || in(cp, 0x3400, 0x4DBF) || in(cp, 0x20000, 0x2A6DF) ||
         in(cp, 0x2A700, 0x2B73F) || in(cp, 0x2B740, 0x2B81F) || in(cp, 0x2B820, 0x2CEAF) ||
         in(cp, 0xF900, 0xFAFF) || in(cp, 0x2F800, 0x2FA1F);
}

bool is_nonspacing_mark(char32_t cp) { return category(cp) == UTF8PROC_CATEGORY_MN; }

std::u32string python_lower(std::u32string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char32_t cp = text[i];
    if (cp < 0x80) {
      out.push_back(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp);
    } else if (cp == 0x0130) {  // SpecialCasing.txt: the one unconditional multi-character lower-casing
      out.push_back(U'i');
      out.push_back(0x0307);
    } else if (cp == 0x03A3) {
      out.push_back(sigma_is_final(text, i) ? 0x03C2 : 0x03C3);
    } else {
      out.push_back(static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))));
    }
  }
  return out;
}

std::u32string nfd(std::u32string_view text) {
  std::u32string out;
  out.reserve(text.size());
  utf8proc_int32_t buffer[32];  // the longest canonical decomposition of one code point is 4
  for (char32_t cp : text) {
    if (cp < 0xC0) {  // nothing below U+00C0 decomposes canonically
      out.push_back(cp);
      continue;
    }
    int last_boundclass = 0;
    const utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), buffer, 32,
                                                       UTF8PROC_DECOMPOSE, &last_boundclass);
    if (n <= 0 || n > 32) {
      out.push_back(cp);  // not a valid scalar value (cannot come from utf8_decode): keep it
      continue;
    }
    for (utf8proc_ssize_t k = 0; k < n; ++k) out.push_back(static_cast<char32_t>(buffer[k]));
  }
  canonical_order(out);
  return out;
}

std::u32string strip_accents(std::u32string_view text) {
  std::u32string out;
  for (char32_t cp : nfd(text))
    if (!is_nonspacing_mark(cp)) out.push_back(cp);
  return out;
}

}  // namespace ptsim::runtime::data
