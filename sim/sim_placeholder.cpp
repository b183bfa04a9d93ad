// sim/sim_placeholder.cpp — keeps the library non-empty while sim/ grows.
