// Pieces: a range of `count` items (elements, columns, bytes) cut, in order,
// into pieces of `width` items, the last one shorter. The one rule behind
// every loop that works through a buffer a piece at a time: MPI-3 calls above
// INT_MAX, the ReduceScatter ring's rounds, Broadcast's and Avg's copies,
// the staging pipeline's chunks (which then balances them). The same
// arguments give the same pieces, so ranks that cut a collective agree.
//
//   for (const Piece p : Pieces(count, width)) Work(p.offset, p.size);
#pragma once

#include <cstddef>

namespace infiniccl {

struct Piece {
  size_t offset;  // first item
  size_t size;    // items, at least 1
};

class Pieces {
 public:
  // `width` 0 counts as 1. No pieces when `count` is 0.
  Pieces(size_t count, size_t width) : count_(count), width_(width > 0 ? width : 1) {}

  // The width of pieces of at most `bytes` for items of `item_bytes`: at
  // least one item, even when one is larger.
  static size_t WidthFor(size_t bytes, size_t item_bytes) {
    return bytes >= item_bytes && item_bytes > 0 ? bytes / item_bytes : 1;
  }

  size_t size() const { return count_ / width_ + (count_ % width_ != 0); }
  size_t max_size() const { return count_ < width_ ? count_ : width_; }
  Piece operator[](size_t k) const {
    const size_t offset = k * width_;
    return {offset, count_ - offset < width_ ? count_ - offset : width_};
  }

  class Iterator {
   public:
    Iterator(const Pieces *pieces, size_t k) : pieces_(pieces), k_(k) {}
    Piece operator*() const { return (*pieces_)[k_]; }
    Iterator &operator++() {
      ++k_;
      return *this;
    }
    bool operator!=(const Iterator &other) const { return k_ != other.k_; }

   private:
    const Pieces *pieces_;
    size_t k_;
  };
  Iterator begin() const { return {this, 0}; }
  Iterator end() const { return {this, size()}; }

 private:
  size_t count_;
  size_t width_;
};

}  // namespace infiniccl
