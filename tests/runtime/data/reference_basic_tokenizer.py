#!/usr/bin/env python3
# tests/runtime/data/reference_basic_tokenizer.py — BERT's BasicTokenizer (tokenization.py, uncased) in
# plain Python + unicodedata, for cross-checking ptsim's table-driven C++ port by hand:
#   python3 tests/runtime/data/reference_basic_tokenizer.py < corpus.txt > py.txt
# and compare with the C++ BasicTokenizer run over the same lines (one line in, tokens joined by spaces out).
# Result when written (Python 3.11, Unicode 14): identical on tests/data/small_corpus.txt, the KJV corpus,
# and every code point of Latin-1, Latin Extended-A, General/Supplemental Punctuation, CJK symbols,
# fullwidth forms and basic Greek/Cyrillic; differences only for Greek/Coptic letters outside U+0386..03CE
# (not lower-cased by ptsim) and Python's context-dependent final sigma (Σ -> ς at a word end).
import sys
import unicodedata


def is_whitespace(c):
    return c in (" ", "\t", "\n", "\r") or unicodedata.category(c) == "Zs"


def is_control(c):
    return c not in ("\t", "\n", "\r") and unicodedata.category(c) in ("Cc", "Cf")


def is_punctuation(c):
    cp = ord(c)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(c).startswith("P")


def is_cjk(cp):
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or
            0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF or
            0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def tokenize(text):
    text = "".join(" " if is_whitespace(c) else c for c in text
                   if not (ord(c) == 0 or ord(c) == 0xFFFD or is_control(c)))
    text = "".join(" " + c + " " if is_cjk(ord(c)) else c for c in text)
    out = []
    for token in text.split():
        token = "".join(c for c in unicodedata.normalize("NFD", token.lower()) if unicodedata.category(c) != "Mn")
        current = []
        for c in token:
            if is_punctuation(c):
                if current:
                    out.append("".join(current))
                    current = []
                out.append(c)
            else:
                current.append(c)
        if current:
            out.append("".join(current))
    return " ".join(out)


for raw in sys.stdin.buffer:
    print(tokenize(raw.decode("utf-8", "replace").rstrip("\n")))
