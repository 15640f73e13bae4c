// One mode at one size: its buffers, one call, and its validation. The
// timing loop (runner.cpp) drives it; nothing here measures time.
#ifndef INFINICCL_BENCH_RUN_H_
#define INFINICCL_BENCH_RUN_H_

#include <infiniccl/infiniccl.h>

#include <string>

#include "calls.h"
#include "device.h"
#include "modes.h"
#include "mpi_include.h"
#include "options.h"
#include "validate.h"

namespace bench {

struct Env {
  const Options *opt;
  int rank;
  int nranks;
  infinicclComm_t comm;
  MPI_Comm mpi_comm;  // a duplicate of MPI_COMM_WORLD for the raw MPI modes
  Device *device;
};

// The buffers of one size, shared by every mode: each holds `elements`
// elements, enough for every collective's layout. When the device's memory
// is host memory, the device pointers are the host ones, so host_C and
// infiniccl_C run on the very same memory.
class BufferSet {
 public:
  BufferSet(const Env &env, size_t bytes);
  void *host_send() const { return host_send_.data(); }
  void *host_recv() const { return host_recv_.data(); }
  void *dev_send() const { return dev_send_.data() ? dev_send_.data() : host_send(); }
  void *dev_recv() const { return dev_recv_.data() ? dev_recv_.data() : host_recv(); }

 private:
  Buffer host_send_, host_recv_, dev_send_, dev_recv_;
};

class ModeRun {
 public:
  ModeRun(const Mode &mode, const Env &env, const BufferSet &buffers, size_t elements);
  // Empty when the mode can run; otherwise why not (the same on all ranks).
  const std::string &unavailable() const { return unavailable_; }
  const Layout &layout() const { return layout_; }

  void Prepare();  // inputs and reusable scratch; not timed
  void Iterate();  // one call; timed
  void Wait();     // until the device has finished what Iterate queued
  // Fresh inputs, poisoned outputs, one call, then the count of wrong
  // elements on this rank.
  size_t Validate();

 private:
  void Stage(void *host_send, void *host_recv);
  void FillInputs(bool poison_outputs);
  void Fill(void *p, bool on_device, size_t count);
  void PoisonAt(void *p, bool on_device, size_t bytes);

  const Mode &mode_;
  const Env &env_;
  const BufferSet &buffers_;
  Layout layout_;
  CallArgs args_;
  Expectation expect_;
  bool on_device_ = false;  // send_/recv_ are device buffers
  void *base_ = nullptr;    // the receive buffer, which in place holds both
  void *send_ = nullptr;
  void *recv_ = nullptr;
  const void *result_ = nullptr;  // where the last call's result lies
  bool result_on_device_ = false;
  Buffer stage_send_, stage_recv_, roundtrip_;
  RsScratch rs_;
  std::string unavailable_;
};

}  // namespace bench

#endif  // INFINICCL_BENCH_RUN_H_
