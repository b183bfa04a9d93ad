// core/input_file.hpp — the check before a file a user named is opened for reading: a directory is named as
// one (it used to read as an empty file: "not valid JSON … unexpected end of input"), and a FIFO, socket or
// device is refused before open() could block on it forever. A missing path passes: the caller's own open
// says it does not exist. Every reader of a user's file calls this first (docs/input-ranges.md).
#pragma once
#include <string>

namespace ptsim::core {

// InputError "<path>: is a directory, expected <expected>" (or "is a FIFO", "a socket", "a device").
void require_regular_file(const std::string& path, const std::string& expected);

}  // namespace ptsim::core
