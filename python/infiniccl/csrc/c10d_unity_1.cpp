// The C++ torch backend compiles as two translation units, this file and
// c10d_unity_2.cpp, each including some of its sources: torch's headers take
// nearly all of each source's compile time, so two units instead of seven
// halve the extension's build (python/setup.py, cmake/Wheel.cmake).
#include "backend.cpp"
#include "collectives.cpp"
#include "lifecycle.cpp"
#include "worker.cpp"
