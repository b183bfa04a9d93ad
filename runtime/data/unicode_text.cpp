// runtime/data/unicode_text.cpp — UTF-8 codec and BERT's character classes over hand-written tables.
// Sources: BERT tokenization.py (_is_whitespace, _is_control, _is_punctuation, _is_chinese_char),
// Unicode 15 UnicodeData.txt for categories and canonical decompositions of the covered blocks.
#include "runtime/data/unicode_text.hpp"

namespace ptsim::runtime::data {

namespace {

bool in(char32_t cp, char32_t lo, char32_t hi) { return cp >= lo && cp <= hi; }

// NFD base letter of U+00C0..U+00FF; '.' = no canonical decomposition (Æ Ð × Ø Þ ß æ ð ÷ ø þ).
constexpr char kLatin1Base[] =
    "AAAAAA.CEEEEIIII.NOOOOO..UUUUY.."
    "aaaaaa.ceeeeiiii.nooooo..uuuuy.y";
// NFD base letter of U+0100..U+017F; '.' = none (Đ đ Ħ ħ ı Ĳ ĳ ĸ Ŀ ŀ Ł ł ŉ Ŋ ŋ Œ œ Ŧ ŧ ſ have only
// compatibility or no decompositions, and NFD leaves them alone).
constexpr char kLatinExtABase[] =
    "AaAaAaCcCcCcCcDd"   // 0100
    "..EeEeEeEeEeGgGg"   // 0110
    "GgGgHh..IiIiIiIi"   // 0120
    "I...JjKk.LlLlLl."   // 0130
    "...NnNnNn...OoOo"   // 0140
    "Oo..RrRrRrSsSsSs"   // 0150
    "SsTtTt..UuUuUuUu"   // 0160
    "UuUuWwYyYZzZzZz.";  // 0170

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
  return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || cp == 0xA0 || cp == 0x1680 ||
         in(cp, 0x2000, 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

bool is_control(char32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  return cp < 0x20 || in(cp, 0x7F, 0x9F) ||                                     // Cc
         cp == 0xAD || in(cp, 0x600, 0x605) || cp == 0x61C || cp == 0x6DD ||      // Cf ...
         cp == 0x70F || cp == 0x180E || in(cp, 0x200B, 0x200F) || in(cp, 0x202A, 0x202E) ||
         in(cp, 0x2060, 0x2064) || in(cp, 0x2066, 0x206F) || cp == 0xFEFF || in(cp, 0xFFF9, 0xFFFB) ||
         cp == 0xE0001 || in(cp, 0xE0020, 0xE007F);
}

bool is_punctuation(char32_t cp) {
  if (in(cp, 33, 47) || in(cp, 58, 64) || in(cp, 91, 96) || in(cp, 123, 126)) return true;
  if (cp < 0xA1) return false;
  // Latin-1 P*: ¡ § « ¶ · » ¿
  if (cp == 0xA1 || cp == 0xA7 || cp == 0xAB || cp == 0xB6 || cp == 0xB7 || cp == 0xBB || cp == 0xBF) return true;
  if (cp == 0x37E || cp == 0x387) return true;                                   // Greek ; and ·
  if (in(cp, 0x55A, 0x55F) || cp == 0x589 || cp == 0x58A) return true;           // Armenian
  if (cp == 0x5BE || cp == 0x5C0 || cp == 0x5C3 || cp == 0x5C6 || cp == 0x5F3 || cp == 0x5F4) return true;
  if (cp == 0x60C || cp == 0x60D || cp == 0x61B || cp == 0x61E || cp == 0x61F || in(cp, 0x66A, 0x66D) ||
      cp == 0x6D4)
    return true;                                                                 // Arabic
  if (cp == 0x964 || cp == 0x965 || cp == 0x970) return true;                    // Devanagari
  // General Punctuation: U+2044 (fraction slash) and U+2052 are Sm, the rest of 2010..205E is P*.
  if (in(cp, 0x2010, 0x2027) || in(cp, 0x2030, 0x2043) || in(cp, 0x2045, 0x2051) || in(cp, 0x2053, 0x205E))
    return true;
  if (cp == 0x207D || cp == 0x207E || cp == 0x208D || cp == 0x208E) return true;  // super/subscript ( )
  if (in(cp, 0x2E00, 0x2E2E) || in(cp, 0x2E30, 0x2E4F)) return true;             // Supplemental Punct.
  // CJK Symbols and Punctuation
  if (in(cp, 0x3001, 0x3003) || in(cp, 0x3008, 0x3011) || in(cp, 0x3014, 0x301F) || cp == 0x3030 ||
      cp == 0x303D || cp == 0x30A0 || cp == 0x30FB)
    return true;
  // Fullwidth forms
  if (in(cp, 0xFF01, 0xFF03) || in(cp, 0xFF05, 0xFF0A) || in(cp, 0xFF0C, 0xFF0F) || cp == 0xFF1A ||
      cp == 0xFF1B || cp == 0xFF1F || cp == 0xFF20 || in(cp, 0xFF3B, 0xFF3D) || cp == 0xFF3F ||
      cp == 0xFF5B || cp == 0xFF5D || in(cp, 0xFF5F, 0xFF65))
    return true;
  return false;
}

bool is_cjk_ideograph(char32_t cp) {
  return in(cp, 0x4E00, 0x9FFF) || in(cp, 0x3400, 0x4DBF) || in(cp, 0x20000, 0x2A6DF) ||
         in(cp, 0x2A700, 0x2B73F) || in(cp, 0x2B740, 0x2B81F) || in(cp, 0x2B820, 0x2CEAF) ||
         in(cp, 0xF900, 0xFAFF) || in(cp, 0x2F800, 0x2FA1F);
}

bool is_combining_mark(char32_t cp) {
  return in(cp, 0x300, 0x36F) || in(cp, 0x1AB0, 0x1ABD) || in(cp, 0x1ABF, 0x1AFF) || in(cp, 0x1DC0, 0x1DFF) ||
         in(cp, 0x20D0, 0x20DC) || cp == 0x20E1 || in(cp, 0x20E5, 0x20F0) || in(cp, 0xFE20, 0xFE2F) ||
         in(cp, 0x302A, 0x302D);
}

char32_t to_lower(char32_t cp) {
  if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
  if (in(cp, 0xC0, 0xDE) && cp != 0xD7) return cp + 0x20;
  if (cp < 0x100) return cp;
  if (cp <= 0x17F) {
    if (cp == 0x130) return 'i';  // Python: "i̇"; see header
    if (cp == 0x178) return 0xFF;
    if (in(cp, 0x100, 0x137) || in(cp, 0x14A, 0x177)) return (cp % 2 == 0) ? cp + 1 : cp;
    if (in(cp, 0x139, 0x148) || in(cp, 0x179, 0x17E)) return (cp % 2 == 1) ? cp + 1 : cp;
    return cp;
  }
  if (in(cp, 0x391, 0x3AB) && cp != 0x3A2) return cp + 0x20;  // Greek capitals incl. Ϊ Ϋ
  if (cp == 0x386) return 0x3AC;
  if (in(cp, 0x388, 0x38A)) return cp + 0x25;
  if (cp == 0x38C) return 0x3CC;
  if (cp == 0x38E || cp == 0x38F) return cp + 0x3F;
  if (in(cp, 0x400, 0x40F)) return cp + 0x50;  // Cyrillic Ѐ..Џ
  if (in(cp, 0x410, 0x42F)) return cp + 0x20;  // Cyrillic А..Я
  if (in(cp, 0xFF21, 0xFF3A)) return cp + 0x20;  // Fullwidth Ａ..Ｚ
  return cp;
}

char32_t strip_accent(char32_t cp) {
  if (in(cp, 0xC0, 0xFF)) {
    char base = kLatin1Base[cp - 0xC0];
    return base == '.' ? cp : static_cast<char32_t>(base);
  }
  if (in(cp, 0x100, 0x17F)) {
    char base = kLatinExtABase[cp - 0x100];
    return base == '.' ? cp : static_cast<char32_t>(base);
  }
  switch (cp) {  // Greek with tonos / dialytika
    case 0x386: return 0x391;
    case 0x388: return 0x395;
    case 0x389: return 0x397;
    case 0x38A: return 0x399;
    case 0x38C: return 0x39F;
    case 0x38E: return 0x3A5;
    case 0x38F: return 0x3A9;
    case 0x390: return 0x3B9;
    case 0x3AA: return 0x399;
    case 0x3AB: return 0x3A5;
    case 0x3AC: return 0x3B1;
    case 0x3AD: return 0x3B5;
    case 0x3AE: return 0x3B7;
    case 0x3AF: return 0x3B9;
    case 0x3B0: return 0x3C5;
    case 0x3CA: return 0x3B9;
    case 0x3CB: return 0x3C5;
    case 0x3CC: return 0x3BF;
    case 0x3CD: return 0x3C5;
    case 0x3CE: return 0x3C9;
    case 0x37E: return ';';    // Greek question mark: NFD singleton to U+003B
    case 0x387: return 0xB7;   // Greek ano teleia: NFD singleton to U+00B7
    case 0x385: return 0xA8;   // Greek dialytika tonos: U+00A8 + U+0301
    // Cyrillic with breve/diaeresis/grave/acute (BERT uncased turns й into и and ё into е).
    case 0x400: case 0x401: return 0x415;
    case 0x403: return 0x413;
    case 0x407: return 0x406;
    case 0x40C: return 0x41A;
    case 0x40D: case 0x419: return 0x418;
    case 0x40E: return 0x423;
    case 0x439: case 0x45D: return 0x438;
    case 0x450: case 0x451: return 0x435;
    case 0x453: return 0x433;
    case 0x457: return 0x456;
    case 0x45C: return 0x43A;
    case 0x45E: return 0x443;
    default: return cp;
  }
}

}  // namespace ptsim::runtime::data
