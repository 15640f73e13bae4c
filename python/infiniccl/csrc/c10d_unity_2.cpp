// The other half of the C++ torch backend's sources (c10d_unity_1.cpp says
// why they compile together).
#include "p2p.cpp"
#include "sim_device.cpp"
#include "work.cpp"
