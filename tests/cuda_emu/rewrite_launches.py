#!/usr/bin/env python3
# tests/cuda_emu/rewrite_launches.py — turns a .cu file into C++ that g++ compiles under the CUDA emulator
# (docs/cuda-emulation.md). Four mechanical rewrites, nothing else changes (a #line keeps g++'s messages on
# the .cu file's lines):
#   kernel<<<grid, block[, shmem[, stream]]>>>(args)  →  ::cuda_emu::launch(ENTRY, grid, block, shmem, stream, [&] { kernel(args); })
#     ENTRY is ::cuda_emu::kernel_entry(kernel), the address cudaFuncSetAttribute is given (the launch checks
#     the dynamic shared memory against that kernel's limit, as CUDA does), or nullptr for a kernel template
#     of this file launched without template arguments (they are deduced from the call: no address to name;
#     such a launch gets the default 48 KiB limit)
#   extern __shared__ [__align__(n)] T name[];         →  T* const name = static_cast<T*>(::cuda_emu::dynamic_shared_memory());
#   __shared__ T a[n], b[m];  (static, at a line's start)  →  the same, then ::cuda_emu::poison_static_shared(&a, sizeof(a)); …
#     on the same line (each block starts the objects as 0xFF bytes: launch.hpp)
#   #include "runtime/exec/cuda/NAME.cuh"              →  #include "NAME.emu.cuh"  (the .cuh files are rewritten too)
# Any other __shared__ in the code (say `static __shared__ float x;`, or one after a template line) stops the
# script with FILE:LINE, so the 0xFF fill can never silently miss a declaration.
# Usage: rewrite_launches.py INPUT.cu|INPUT.cuh OUTPUT
import re
import sys

OPENERS, CLOSERS = "([{", ")]}"


def matching_close(text, open_at):
    """Index of the bracket closing text[open_at] (one of ([{)."""
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] in OPENERS:
            depth += 1
        elif text[i] in CLOSERS:
            depth -= 1
            if depth == 0:
                return i
    raise SystemExit(f"rewrite_launches: unbalanced bracket from offset {open_at}")


def split_top_level(text):
    """text split at the commas outside any bracket."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in OPENERS:
            depth += 1
        elif c in CLOSERS:
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return parts


def kernel_start(text, end):
    """Start of the kernel expression (a qualified name, maybe with template arguments) ending at `end`."""
    i = end
    while i > 0 and text[i - 1].isspace():
        i -= 1
    if text[i - 1] == ">":  # template arguments: back to the matching '<'
        depth = 0
        while True:
            i -= 1
            depth += {">": 1, "<": -1}.get(text[i], 0)
            if depth == 0:
                break
    while i > 0 and (text[i - 1].isalnum() or text[i - 1] in "_:"):
        i -= 1
    return i


# A __global__ function's name: the identifier before its parameter list (after any __launch_bounds__(…)).
GLOBAL_NAME = re.compile(r"__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(")


def kernel_templates(text):
    """Names of the __global__ function templates text defines (a `template <…>` right before __global__)."""
    code = code_only(text)
    return {m.group(1) for m in GLOBAL_NAME.finditer(code) if code[:m.start()].rstrip().endswith(">")}


def kernel_entry(kernel, templates):
    """The launch's ENTRY argument (see the header) for the kernel expression `kernel`."""
    if "<" not in kernel and kernel.split("::")[-1] in templates:
        return "nullptr"
    return f"::cuda_emu::kernel_entry({kernel})"


def rewrite_launch(text, at, templates):
    """text with the launch whose <<< is at `at` rewritten, and where to search on."""
    close = text.index(">>>", at)
    config = split_top_level(text[at + 3:close])
    if not 2 <= len(config) <= 4:
        raise SystemExit(f"rewrite_launches: a launch needs 2 to 4 configuration values: {config}")
    config += ["0", "nullptr"][len(config) - 2:]
    paren = close + 3
    while text[paren].isspace():
        paren += 1
    if text[paren] != "(":
        raise SystemExit("rewrite_launches: no argument list after >>>")
    args_end = matching_close(text, paren)
    start = kernel_start(text, at)
    kernel = text[start:at].strip()
    call = (f"::cuda_emu::launch({kernel_entry(kernel, templates)}, {', '.join(config)}, "
            f"[&] {{ {kernel}({text[paren + 1:args_end]}); }})")
    return text[:start] + call + text[args_end + 1:], start + len(call)


EXTERN_SHARED = re.compile(r"extern\s+__shared__\s+(?:__align__\(\s*\d+\s*\)\s+)?([\w:\s]+?)\s*(\w+)\s*\[\s*\]\s*;")


# A static __shared__ declaration: at the start of a line (comments never start with it), up to its ';'.
STATIC_SHARED = re.compile(r"^([ \t]*__shared__\s+)([^;]*);", re.MULTILINE)


def declared_name(declarator):
    """The object a declarator such as `qs[kTile][kD + 1]` or `x` declares."""
    names = re.findall(r"\w+", declarator.split("[", 1)[0])
    if not names:
        raise SystemExit(f"rewrite_launches: cannot read a __shared__ declarator: {declarator!r}")
    return names[-1]


def poison_static_shared(m):
    names = [declared_name(d) for d in split_top_level(m.group(2))]
    calls = " ".join(f"::cuda_emu::poison_static_shared(&{n}, sizeof({n}));" for n in names)
    return f"{m.group(1)}{m.group(2)}; {calls}"


# A comment or a string / character literal (a backslash escapes the next character in a literal).
NOT_CODE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.DOTALL)
SHARED_TOKEN = re.compile(r"\b__shared__\b")


def code_only(text):
    """text with comments and literals blanked (newlines kept), so offsets and lines stay the same."""
    return NOT_CODE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def unrewritten_shared_lines(text):
    """Lines of text holding a __shared__ token in code that neither rewrite takes (the rewrites' own
    matches, on the text as they see it)."""
    taken = {m.start() + m.group(0).index("__shared__") for m in EXTERN_SHARED.finditer(text)}
    taken |= {m.start(1) + m.group(1).index("__shared__") for m in STATIC_SHARED.finditer(text)}
    code = code_only(text)
    return [code.count("\n", 0, m.start()) + 1 for m in SHARED_TOKEN.finditer(code) if m.start() not in taken]


KERNEL_HEADER = re.compile(r'#include "runtime/exec/cuda/(\w+)\.cuh"')


def rewrite(text):
    text = KERNEL_HEADER.sub(lambda m: f'#include "{m.group(1)}.emu.cuh"', text)
    text = EXTERN_SHARED.sub(
        lambda m: f"{m.group(1)}* const {m.group(2)} = static_cast<{m.group(1)}*>(::cuda_emu::dynamic_shared_memory());",
        text)
    text = STATIC_SHARED.sub(poison_static_shared, text)
    templates = kernel_templates(text)
    at = text.find("<<<")
    while at != -1:
        text, resume = rewrite_launch(text, at, templates)
        at = text.find("<<<", resume)
    return text


def main():
    source, output = sys.argv[1], sys.argv[2]
    with open(source, encoding="utf-8") as f:
        text = f.read()
    missed = unrewritten_shared_lines(text)
    if missed:
        raise SystemExit("\n".join(
            f"{source}:{line}: rewrite_launches: a __shared__ it does not rewrite (only `extern __shared__ T name[];` "
            f"and a static `__shared__ T name…;` starting its line are)" for line in missed))
    with open(output, "w", encoding="utf-8") as f:
        f.write(f'#line 1 "{source}"\n' + rewrite(text))


if __name__ == "__main__":
    main()
