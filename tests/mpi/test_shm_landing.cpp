// AllReduce of device buffers of one stage at most through shared memory,
// queued to the progress engine (ShmBackend::Lands): the input is copied
// into the rank's landing area on the caller's stream, the result out of it
// behind the gate. On the EMULATED device (sim), with INFINICCL_SHM=1.
// Every call is queued without synchronising, behind emulated kernels whose
// length grows with the rank, and every element of every result is compared
// exactly with a reduction computed here (ReduceInput, one tag per call):
// int32 sum, float32 max, bfloat16 sum and float64 prod, counts from 1 to a
// whole stage (odd ones among them), in place and out of place.
//
// Modes (argv[1]):
//   streams        - every rank lands; calls alternate between two streams,
//                    the second stream's call queued with nothing before it
//                    while the first one's waits behind a kernel (its copy
//                    in must wait for the landing area to be free); each
//                    call makes exactly one copy in and one copy out
//                    (infinicclGetStagingStats)
//   host_peers     - even ranks land, odd ranks pass host buffers (staged
//                    protocol: they read the landed ranks' inputs in their
//                    landing areas and write their slices there)
//   blocking_peers - even ranks land, odd ranks run device buffers without
//                    the engine (INFINICCL_ASYNC=0: device copies into and
//                    out of their stages)
#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "device_mirror.h"

using namespace itest;

namespace {

struct Kind {
  infinicclDataType_t dt;
  infinicclRedOp_t op;
  size_t size;
  const char *name;
};
const Kind kKinds[] = {{infinicclInt32, infinicclSum, 4, "int32 sum"},
                       {infinicclFloat32, infinicclMax, 4, "float32 max"},
                       {infinicclBFloat16, infinicclSum, 2, "bfloat16 sum"},
                       {infinicclFloat64, infinicclProd, 8, "float64 prod"}};
// Bytes a call, the last one a whole stage (ShmBackend::kStageBytes).
const size_t kBytes[] = {8, 200, 4100, (size_t{64} << 10) + 24, size_t{256} << 10,
                         (size_t{300} << 10) + 8, size_t{1} << 20};

// One call: its buffers (device or host), its stream and what it expects.
struct Call {
  std::unique_ptr<DeviceBuffer> dsend, drecv;
  std::vector<unsigned char> hsend, hrecv;
  Kind kind{};
  size_t count = 0;
  int tag = 0;
  bool on_device = true, in_place = false, kernel = true;
  void *stream = nullptr;
};

// Makes a call's buffers and uploads its input: before any call is queued
// (an upload and an allocation wait for the device, as CUDA's may).
std::unique_ptr<Call> Prepare(const Kind &k, size_t bytes, int tag, int rank, bool on_device,
                              bool in_place, void *stream) {
  auto c = std::make_unique<Call>();
  c->kind = k;
  c->count = bytes / k.size == 0 ? 1 : bytes / k.size;
  c->tag = tag;
  c->on_device = on_device;
  c->in_place = in_place;
  c->stream = stream;
  std::vector<unsigned char> input = ReduceInput(k.dt, k.op, tag, rank, c->count);
  if (on_device) {
    c->dsend = std::make_unique<DeviceBuffer>(input.size());
    c->dsend->Upload(input);
    if (!in_place) {
      c->drecv = std::make_unique<DeviceBuffer>(input.size());
      c->drecv->Upload(std::vector<unsigned char>(input.size(), 0));
    }
  } else {
    c->hsend = input;
    c->hrecv.assign(input.size(), 0);
  }
  return c;
}

// Rank r's stream is held (r+1)*3 ms (unless !c.kernel), then the call is
// queued behind it.
void Queue(Call &c, int rank, infinicclComm_t comm) {
  void *send = c.on_device ? c.dsend->ptr : c.hsend.data();
  void *recv = c.in_place ? send : c.on_device ? c.drecv->ptr : c.hrecv.data();
  if (c.on_device && c.kernel) CHECK(g_sim->Kernel(c.stream, unsigned(rank + 1) * 3000u).ok());
  const infinicclResult_t r = infinicclAllReduce(send, recv, c.count, c.kind.dt, c.kind.op, comm,
                                                 c.on_device ? c.stream : nullptr);
  CHECK(r == infinicclSuccess, "%s of %zu: %s (%s)", c.kind.name, c.count, ResultName(r),
        SafeLastError());
}

void Verify(const Call &c, int n) {
  std::vector<unsigned char> got;
  if (c.on_device) {
    got = (c.in_place ? *c.dsend : *c.drecv).Download(c.stream);
  } else {
    got = c.in_place ? c.hsend : c.hrecv;
  }
  const long wrong = CountWrongReduce(n, c.kind.dt, c.kind.op, c.tag, got, c.count);
  CHECK(wrong == 0, "%s of %zu (tag %d, %s, %s): %ld elements wrong", c.kind.name, c.count,
        c.tag, c.in_place ? "in place" : "out of place", c.on_device ? "device" : "host", wrong);
}

infinicclStagingStats Stats() {
  infinicclStagingStats s{};
  CHECK_RC(infinicclGetStagingStats(&s), infinicclSuccess);
  return s;
}

}  // namespace

int main(int argc, char **argv) {
  const std::string mode = argc > 1 ? argv[1] : "streams";
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  g_rank = rank;
  const bool odd = rank % 2 == 1;
  // Read by infinicclInit.
  if (mode == "blocking_peers" && odd) setenv("INFINICCL_ASYNC", "0", 1);
  CHECK_RC(infinicclInit(&argc, &argv), infinicclSuccess);
  EnableSim();
  infinicclComm_t comm = nullptr;
  CHECK_RC(infinicclCommInitAll(&comm, 1, nullptr), infinicclSuccess);
  void *streams[2] = {nullptr, nullptr};
  for (void *&s : streams) CHECK(g_dev->StreamCreate(&s).ok());

  const bool device = mode != "host_peers" || !odd;
  std::vector<std::unique_ptr<Call>> calls;
  int tag = 1;
  for (int round = 0; round < 2; ++round) {
    for (const Kind &k : kKinds) {
      for (size_t bytes : kBytes) {
        // streams: every other call on the second stream.
        void *stream = streams[mode == "streams" ? tag % 2 : 0];
        calls.push_back(Prepare(k, bytes, tag, rank, device, (tag + round) % 3 == 0, stream));
        calls.back()->kernel = mode != "streams" || tag % 2 == 0;
        ++tag;
      }
    }
  }
  const infinicclStagingStats before = Stats();
  for (const auto &c : calls) Queue(*c, rank, comm);
  const infinicclStagingStats after = Stats();
  for (const auto &c : calls) Verify(*c, n);
  if (mode == "streams") {
    const unsigned long long made = calls.size();
    CHECK(after.d2h_copies - before.d2h_copies == made &&
              after.h2d_copies - before.h2d_copies == made,
          "%llu landed calls made %llu copies in and %llu out (one each expected)", made,
          after.d2h_copies - before.d2h_copies, after.h2d_copies - before.h2d_copies);
  }
  for (void *s : streams) {
    CHECK(g_dev->StreamSynchronize(s).ok());
    CHECK(g_dev->StreamDestroy(s).ok());
  }
  CHECK_RC(infinicclCommDestroy(comm), infinicclSuccess);
  const long total = TotalFailures();
  if (rank == 0) {
    std::printf("test_shm_landing %s: %zu calls a rank, %ld failures\n", mode.c_str(),
                calls.size(), total);
  }
  const bool finalized = infinicclFinalize() == infinicclSuccess;
  MPI_Finalize();  // initialised here, so finalised here
  return finalized && total == 0 ? 0 : 1;
}
