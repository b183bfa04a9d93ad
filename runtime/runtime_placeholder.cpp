// runtime/runtime_placeholder.cpp — keeps the library non-empty while runtime/ grows.
