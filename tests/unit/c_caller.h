// Passing an int that is not one of an enum's values, as a C caller can.
//
// In C++ an object of an unscoped enum without a fixed underlying type may
// only hold values in the enum's range (0..15 for infinicclDataType_t), and
// UBSan (-fsanitize=enum, part of `undefined`) flags loading anything else.
// A C caller has no such restriction: it passes any int. The tests therefore
// never hold such a value in an enum object themselves:
//  - CallAsC() calls a function through the C ABI with a plain int
//    argument (an enum parameter is passed exactly like an int on every ABI
//    GCC supports), which is what a C program does;
//  - StoreRaw() writes the int's bytes into an enum field, as a C program's
//    struct would hold them, for code under test that reads the field.
#pragma once

#include <cstring>

namespace c_caller {

template <typename R, typename E>
R CallAsC(R (*fn)(E), int value) {
  static_assert(sizeof(E) == sizeof(int));
  using IntFn = R (*)(int);
  // Through void(*)(void), which GCC lets match any function type.
  return reinterpret_cast<IntFn>(reinterpret_cast<void (*)()>(fn))(value);
}

template <typename E>
void StoreRaw(E *field, int value) {
  static_assert(sizeof(E) == sizeof(int));
  std::memcpy(static_cast<void *>(field), &value, sizeof value);
}

}  // namespace c_caller
