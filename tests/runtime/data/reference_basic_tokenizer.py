#!/usr/bin/env python3
# tests/runtime/data/reference_basic_tokenizer.py — BERT's BasicTokenizer (tokenization.py, uncased) in
# plain Python + unicodedata, the reference ptsim's C++ port (runtime/data/tokenizer.cpp) is checked against.
#   python3 tests/runtime/data/reference_basic_tokenizer.py < corpus.txt > py.txt
#     one line in, its tokens joined by spaces out (compare by hand with the C++ tokenizer's output);
#   python3 tests/runtime/data/reference_basic_tokenizer.py --every-code-point
#     one JSON line {"cp": N, "in": TEXT, "out": [TOKENS]} per code point Python's Unicode database assigns
#     (categories other than Cn, Co, Cs; every 64th CJK unified ideograph, whose rule is a plain range
#     check), each embedded in contexts that exercise lower-casing, NFD, punctuation and the final sigma.
#     The `cpu` test runtime_data ("every code point ... equals Python") compares ptsim with it.
import json
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


def every_code_point():
    # Σ after the character makes it a final-sigma test when the character is a cased letter; the other
    # contexts put it inside a word, alone, between letters, and before a punctuation mark.
    print(json.dumps({"unicode": unicodedata.unidata_version}))
    for cp in range(0x110000):
        c = chr(cp)
        if unicodedata.category(c) in ("Cn", "Co", "Cs"):
            continue
        if is_cjk(cp) and cp % 64:
            continue
        text = f"X{c}y {c} \u03a3{c} {c}\u03a3. a{c}\u03a3"
        print(json.dumps({"cp": cp, "in": text, "out": tokenize(text).split(" ") if tokenize(text) else []}))


if len(sys.argv) > 1 and sys.argv[1] == "--every-code-point":
    every_code_point()
else:
    for raw in sys.stdin.buffer:
        print(tokenize(raw.decode("utf-8", "replace").rstrip("\n")))
