// Tagged Send/Recv and receives from any source (infinicclSendTagged,
// infinicclRecvTagged, INFINICCL_ANY_SOURCE) on the MPI paths.
//
// Modes (argv[1]):
//   host - host buffers: messages of two tags sent in one order and
//          received in the other, inside a group at 4 MiB and more (past
//          every eager limit) and outside a group at 400 B to 1 KiB;
//          receives from any source from every other rank, outside and
//          inside a group, the sender reported and the data its own; tag 0
//          against plain Send/Recv both ways (and a tag-1 message that a
//          plain Recv must not take); INFINICCL_TAG_MAX; bad tags and peers
//          refused with InvalidArgument, a message, nothing posted and
//          `*source` untouched, inside a group too.
//   host-serialized - the same with MPI started by the test at
//          MPI_THREAD_SERIALIZED (receives posted under the library's lock
//          and polled: the sender comes from the polled status).
//   sim  - EMULATED device buffers (staged, through the progress engine;
//          run with a pipeline chunk of a few KiB so large receives are cut
//          into chunks): the two tags reversed in and out of a group, and
//          receives from any source with `*source` read once the stream is
//          synchronized, one-chunk and pipelined, in and out of a group.
//   sim-direct - the sim tests with INFINICCL_MPI_DEVICE_DIRECT=1 (the
//          device buffers handed to MPI as they are).
// Every expected value is computed from the sender's rank and the index
// (test_util.h: DataValue).
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "device_mirror.h"

using namespace itest;

namespace {

int g_n = 0;

void Barrier(infinicclComm_t comm) {
  int one = 1, sum = 0;
  CHECK_RC(infinicclAllReduce(&one, &sum, 1, infinicclInt32, infinicclSum, comm, nullptr),
           infinicclSuccess);
}

// ---- host buffers -----------------------------------------------------------

// Each rank sends its right neighbour a message of tag 5 and then one of tag
// 9, of different lengths and patterns, and receives its left neighbour's in
// the other order. Inside a group at sizes no MPI sends eagerly; outside one
// at a size every MPI does (a blocking send of a larger one would wait for
// its receive, which comes after the other tag's).
void TestTagsReversed(infinicclComm_t comm, int rank, bool grouped, size_t count_a) {
  const int right = (rank + 1) % g_n, left = (rank + g_n - 1) % g_n;
  const size_t count_b = count_a + count_a / 3 + 1;
  for (infinicclDataType_t dt : {infinicclInt32, infinicclFloat64}) {
    const std::vector<unsigned char> a = Pattern(dt, 51, rank, count_a);
    const std::vector<unsigned char> b = Pattern(dt, 52, rank, count_b);
    std::vector<unsigned char> got_a(a.size(), 0xee), got_b(b.size(), 0xee);
    int from_a = -7, from_b = -7;
    if (grouped) CHECK_RC(infinicclGroupStart(), infinicclSuccess);
    CHECK_RC(infinicclSendTagged(a.data(), count_a, dt, right, 5, comm, nullptr),
             infinicclSuccess);
    CHECK_RC(infinicclSendTagged(b.data(), count_b, dt, right, 9, comm, nullptr),
             infinicclSuccess);
    CHECK_RC(infinicclRecvTagged(got_b.data(), count_b, dt, left, 9, &from_b, comm, nullptr),
             infinicclSuccess);
    CHECK_RC(infinicclRecvTagged(got_a.data(), count_a, dt, left, 5, &from_a, comm, nullptr),
             infinicclSuccess);
    if (grouped) CHECK_RC(infinicclGroupEnd(), infinicclSuccess);
    CHECK(Wrong(dt, 51, left, got_a.data(), count_a) == 0 &&
              Wrong(dt, 52, left, got_b.data(), count_b) == 0,
          "%s tags reversed (%s, %zu/%zu elements): data", grouped ? "grouped" : "blocking",
          Info(dt).name, count_a, count_b);
    CHECK(from_a == left && from_b == left, "tags reversed: source %d/%d, expected %d",
          from_a, from_b, left);
  }
}

// Rank `receiver` takes one message from every other rank, from any source,
// with `*source` naming the sender and the data that sender's. Every rank
// is the receiver once (a distinct tag each round). Blocking.
void TestAnySourceBlocking(infinicclComm_t comm, int rank, size_t count) {
  const infinicclDataType_t dt = infinicclInt64;
  for (int receiver = 0; receiver < g_n; ++receiver) {
    const int tag = 300 + receiver;
    if (rank != receiver) {
      const std::vector<unsigned char> mine = Pattern(dt, 60 + receiver, rank, count);
      CHECK_RC(infinicclSendTagged(mine.data(), count, dt, receiver, tag, comm, nullptr),
               infinicclSuccess);
      continue;
    }
    std::set<int> seen;
    for (int k = 0; k < g_n - 1; ++k) {
      std::vector<unsigned char> got(count * Info(dt).size, 0xee);
      int from = -7;
      CHECK_RC(infinicclRecvTagged(got.data(), count, dt, INFINICCL_ANY_SOURCE, tag, &from,
                                   comm, nullptr),
               infinicclSuccess);
      CHECK(from >= 0 && from < g_n && from != rank && seen.insert(from).second,
            "any source, %zu elements: sender %d reported (message %d)", count, from, k);
      if (from >= 0 && from < g_n) {
        CHECK(Wrong(dt, 60 + receiver, from, got.data(), count) == 0,
              "any source, %zu elements: data is not rank %d's", count, from);
      }
    }
  }
  Barrier(comm);
}

// Every rank sends to every other rank and receives g_n - 1 messages from
// any source, all in one group, past the eager limit.
void TestAnySourceGrouped(infinicclComm_t comm, int rank, size_t count) {
  const infinicclDataType_t dt = infinicclFloat32;
  std::vector<std::vector<unsigned char>> send(g_n), got(g_n);
  std::vector<int> from(g_n, -7);
  CHECK_RC(infinicclGroupStart(), infinicclSuccess);
  for (int k = 0; k < g_n - 1; ++k) {
    got[k].assign(count * 4, 0xee);
    CHECK_RC(infinicclRecvTagged(got[k].data(), count, dt, INFINICCL_ANY_SOURCE, 77, &from[k],
                                 comm, nullptr),
             infinicclSuccess);
  }
  for (int p = 0; p < g_n; ++p) {
    if (p == rank) continue;
    send[p] = Pattern(dt, 70 + p, rank, count);  // seed names the receiver
    CHECK_RC(infinicclSendTagged(send[p].data(), count, dt, p, 77, comm, nullptr),
             infinicclSuccess);
  }
  CHECK_RC(infinicclGroupEnd(), infinicclSuccess);
  std::set<int> seen;
  for (int k = 0; k < g_n - 1; ++k) {
    CHECK(from[k] >= 0 && from[k] < g_n && from[k] != rank && seen.insert(from[k]).second,
          "grouped any source: sender %d reported for receive %d", from[k], k);
    if (from[k] >= 0 && from[k] < g_n) {
      CHECK(Wrong(dt, 70 + rank, from[k], got[k].data(), count) == 0,
            "grouped any source: data is not rank %d's", from[k]);
    }
  }
}

// Tag 0 is Send/Recv's: SendTagged(0) -> Recv and Send -> RecvTagged(0). A
// message of tag 1 sent first is not taken by the plain Recv.
void TestTagZero(infinicclComm_t comm, int rank) {
  const int right = (rank + 1) % g_n, left = (rank + g_n - 1) % g_n;
  const infinicclDataType_t dt = infinicclInt32;
  const size_t count = 1000;
  const std::vector<unsigned char> one = Pattern(dt, 81, rank, count);
  const std::vector<unsigned char> zero = Pattern(dt, 82, rank, count);
  std::vector<unsigned char> got_one(one.size(), 0xee), got_zero(zero.size(), 0xee);
  int from = -7;
  CHECK_RC(infinicclGroupStart(), infinicclSuccess);
  CHECK_RC(infinicclSendTagged(one.data(), count, dt, right, 1, comm, nullptr),
           infinicclSuccess);
  CHECK_RC(infinicclSendTagged(zero.data(), count, dt, right, 0, comm, nullptr),
           infinicclSuccess);
  CHECK_RC(infinicclRecv(got_zero.data(), count, dt, left, comm, nullptr), infinicclSuccess);
  CHECK_RC(infinicclRecvTagged(got_one.data(), count, dt, left, 1, &from, comm, nullptr),
           infinicclSuccess);
  CHECK_RC(infinicclGroupEnd(), infinicclSuccess);
  CHECK(Wrong(dt, 82, left, got_zero.data(), count) == 0,
        "plain Recv did not get the SendTagged(tag 0) message");
  CHECK(Wrong(dt, 81, left, got_one.data(), count) == 0 && from == left,
        "RecvTagged(tag 1) after a plain Recv: source %d", from);

  // The other way, blocking: a plain Send, a RecvTagged of tag 0.
  std::fill(got_zero.begin(), got_zero.end(), 0xee);
  from = -7;
  if (rank == 0) {
    CHECK_RC(infinicclSend(zero.data(), count, dt, g_n - 1, comm, nullptr), infinicclSuccess);
  }
  if (rank == g_n - 1) {
    CHECK_RC(infinicclRecvTagged(got_zero.data(), count, dt, 0, 0, &from, comm, nullptr),
             infinicclSuccess);
    CHECK(Wrong(dt, 82, 0, got_zero.data(), count) == 0 && from == 0,
          "RecvTagged(tag 0) of a plain Send: source %d", from);
  }
  // Any source of tag 0 takes a plain Send too; NULL source is allowed.
  if (rank == g_n - 1) {
    CHECK_RC(infinicclSend(zero.data(), count, dt, 0, comm, nullptr), infinicclSuccess);
  }
  if (rank == 0) {
    std::fill(got_zero.begin(), got_zero.end(), 0xee);
    CHECK_RC(infinicclRecvTagged(got_zero.data(), count, dt, INFINICCL_ANY_SOURCE, 0, nullptr,
                                 comm, nullptr),
             infinicclSuccess);
    CHECK(Wrong(dt, 82, g_n - 1, got_zero.data(), count) == 0,
          "any-source RecvTagged(tag 0, source NULL) of a plain Send");
  }
  Barrier(comm);
}

// The largest tag travels (both MPIs' MPI_TAG_UB carry it).
void TestTagMax(infinicclComm_t comm, int rank) {
  const int right = (rank + 1) % g_n, left = (rank + g_n - 1) % g_n;
  const int64_t mine = 1000 + rank;
  int64_t got = -1;
  int from = -7;
  CHECK_RC(infinicclGroupStart(), infinicclSuccess);
  CHECK_RC(infinicclSendTagged(&mine, 1, infinicclInt64, right, INFINICCL_TAG_MAX, comm,
                               nullptr),
           infinicclSuccess);
  CHECK_RC(infinicclRecvTagged(&got, 1, infinicclInt64, INFINICCL_ANY_SOURCE,
                               INFINICCL_TAG_MAX, &from, comm, nullptr),
           infinicclSuccess);
  CHECK_RC(infinicclGroupEnd(), infinicclSuccess);
  CHECK(got == 1000 + left && from == left, "INFINICCL_TAG_MAX: %lld from %d",
        static_cast<long long>(got), from);
}

// Refused before anything is posted: InvalidArgument, a message naming the
// call and the argument, `*source` untouched.
void ExpectRefused(infinicclResult_t rc, const char *call, const char *words) {
  CHECK(rc == infinicclInvalidArgument, "%s: %s, expected InvalidArgument", call,
        ResultName(rc));
  const char *msg = SafeLastError();
  CHECK(NamesCall(msg, call) && std::strstr(msg, words) != nullptr,
        "%s: message \"%s\" lacks \"%s\"", call, msg, words);
}

void TestInvalid(infinicclComm_t comm, int rank) {
  const int right = (rank + 1) % g_n, left = (rank + g_n - 1) % g_n;
  int x = 40 + rank, y = -1, from = -7;
  ExpectRefused(infinicclSendTagged(&x, 1, infinicclInt32, right, -1, comm, nullptr),
                "SendTagged", "tag -1 is out of range (0..INFINICCL_TAG_MAX");
  ExpectRefused(
      infinicclRecvTagged(&y, 1, infinicclInt32, left, INFINICCL_TAG_MAX + 1, &from, comm,
                          nullptr),
      "RecvTagged",
      (std::string("tag ") + std::to_string(INFINICCL_TAG_MAX + 1) + " is out of range")
          .c_str());
  ExpectRefused(infinicclSendTagged(&x, 1, infinicclInt32, g_n, 3, comm, nullptr),
                "SendTagged", "out of range for");
  ExpectRefused(infinicclRecvTagged(&y, 1, infinicclInt32, -2, 3, &from, comm, nullptr),
                "RecvTagged", "peer -2 is out of range");
  ExpectRefused(infinicclRecvTagged(&y, 1, infinicclInt32, g_n, 3, &from, comm, nullptr),
                "RecvTagged", "INFINICCL_ANY_SOURCE");
  ExpectRefused(
      infinicclSendTagged(&x, 1, infinicclInt32, INFINICCL_ANY_SOURCE, 3, comm, nullptr),
      "SendTagged", "any source is for receives");
  // Plain Recv takes no INFINICCL_ANY_SOURCE.
  ExpectRefused(infinicclRecv(&y, 1, infinicclInt32, INFINICCL_ANY_SOURCE, comm, nullptr),
                "Recv", "peer -1 is out of range");
  // Outside a group a rank cannot send to itself, tagged or not.
  ExpectRefused(infinicclSendTagged(&x, 1, infinicclInt32, rank, 3, comm, nullptr),
                "SendTagged", "calling rank");
  ExpectRefused(infinicclRecvTagged(&y, 1, infinicclInt32, rank, 3, &from, comm, nullptr),
                "RecvTagged", "calling rank");
  CHECK(from == -7 && y == -1, "a refused call wrote source %d, data %d", from, y);

  // Inside a group: the bad call is left out, the group's End says so, the
  // valid calls complete; nothing of the bad calls was posted, so the tag-3
  // messages of the next group match their own receives.
  CHECK_RC(infinicclGroupStart(), infinicclSuccess);
  ExpectRefused(infinicclSendTagged(&x, 1, infinicclInt32, right, INFINICCL_TAG_MAX + 1,
                                    comm, nullptr),
                "SendTagged", "out of range");
  ExpectRefused(infinicclRecvTagged(&y, 1, infinicclInt32, -3, 3, &from, comm, nullptr),
                "RecvTagged", "peer -3");
  CHECK_RC(infinicclSendTagged(&x, 1, infinicclInt32, right, 4, comm, nullptr),
           infinicclSuccess);
  CHECK_RC(infinicclRecvTagged(&y, 1, infinicclInt32, left, 4, &from, comm, nullptr),
           infinicclSuccess);
  CHECK_RC(infinicclGroupEnd(), infinicclInvalidArgument);
  CHECK(std::strstr(SafeLastError(), "2 calls in this group failed") != nullptr,
        "GroupEnd: %s", SafeLastError());
  CHECK(y == 40 + left && from == left, "valid calls of a failed group: %d from %d", y, from);
  int z = -1;
  from = -7;
  CHECK_RC(infinicclGroupStart(), infinicclSuccess);
  CHECK_RC(infinicclSendTagged(&x, 1, infinicclInt32, right, 3, comm, nullptr),
           infinicclSuccess);
  CHECK_RC(infinicclRecvTagged(&z, 1, infinicclInt32, INFINICCL_ANY_SOURCE, 3, &from, comm,
                               nullptr),
           infinicclSuccess);
  CHECK_RC(infinicclGroupEnd(), infinicclSuccess);
  CHECK(z == 40 + left && from == left, "after refused calls: %d from %d", z, from);
}

// One rank: any source outside a group can never be matched.
void TestOneRank(infinicclComm_t comm) {
  int y = -1, from = -7;
  ExpectRefused(infinicclRecvTagged(&y, 1, infinicclInt32, INFINICCL_ANY_SOURCE, 0, &from,
                                    comm, nullptr),
                "RecvTagged", "communicator of one rank");
  // Inside a group it matches the rank's own send.
  const int x = 5;
  CHECK_RC(infinicclGroupStart(), infinicclSuccess);
  CHECK_RC(infinicclSendTagged(&x, 1, infinicclInt32, 0, 12, comm, nullptr),
           infinicclSuccess);
  CHECK_RC(infinicclRecvTagged(&y, 1, infinicclInt32, INFINICCL_ANY_SOURCE, 12, &from, comm,
                               nullptr),
           infinicclSuccess);
  CHECK_RC(infinicclGroupEnd(), infinicclSuccess);
  CHECK(y == 5 && from == 0, "one rank, grouped any source: %d from %d", y, from);
}

#if defined(ITEST_SIM)
// ---- emulated device buffers -------------------------------------------------

// TestTagsReversed on device buffers, on one stream.
void TestSimTagsReversed(infinicclComm_t comm, int rank, bool grouped, size_t count_a) {
  const int right = (rank + 1) % g_n, left = (rank + g_n - 1) % g_n;
  const size_t count_b = count_a + count_a / 3 + 1;
  const infinicclDataType_t dt = infinicclInt32;
  const std::vector<unsigned char> a = Pattern(dt, 91, rank, count_a);
  const std::vector<unsigned char> b = Pattern(dt, 92, rank, count_b);
  DeviceBuffer da(a.size()), db(b.size()), ga(a.size()), gb(b.size());
  void *stream = nullptr;
  CHECK(g_sim->StreamCreate(&stream).ok());
  da.UploadAsync(a, stream);
  db.UploadAsync(b, stream);
  int from_a = -7, from_b = -7;
  if (grouped) CHECK_RC(infinicclGroupStart(), infinicclSuccess);
  CHECK_RC(infinicclSendTagged(da.ptr, count_a, dt, right, 5, comm, stream),
           infinicclSuccess);
  CHECK_RC(infinicclSendTagged(db.ptr, count_b, dt, right, 9, comm, stream),
           infinicclSuccess);
  CHECK_RC(infinicclRecvTagged(gb.ptr, count_b, dt, left, 9, &from_b, comm, stream),
           infinicclSuccess);
  CHECK_RC(infinicclRecvTagged(ga.ptr, count_a, dt, left, 5, &from_a, comm, stream),
           infinicclSuccess);
  if (grouped) CHECK_RC(infinicclGroupEnd(), infinicclSuccess);
  CHECK(g_sim->StreamSynchronize(stream).ok());
  CHECK(Wrong(dt, 91, left, ga.Download().data(), count_a) == 0 &&
            Wrong(dt, 92, left, gb.Download().data(), count_b) == 0,
        "sim %s tags reversed (%zu/%zu elements): data", grouped ? "grouped" : "blocking",
        count_a, count_b);
  CHECK(from_a == left && from_b == left, "sim tags reversed: source %d/%d, expected %d",
        from_a, from_b, left);
  g_sim->StreamDestroy(stream);
  Barrier(comm);
}

// TestAnySourceBlocking on device buffers: `*source` read after the stream
// was synchronized (the calls may return before the data has arrived).
void TestSimAnySource(infinicclComm_t comm, int rank, size_t count) {
  const infinicclDataType_t dt = infinicclFloat64;
  void *stream = nullptr;
  CHECK(g_sim->StreamCreate(&stream).ok());
  for (int receiver = 0; receiver < g_n; ++receiver) {
    const int tag = 400 + receiver;
    if (rank != receiver) {
      const std::vector<unsigned char> mine = Pattern(dt, 95 + receiver, rank, count);
      DeviceBuffer d(mine.size());
      d.UploadAsync(mine, stream);
      CHECK_RC(infinicclSendTagged(d.ptr, count, dt, receiver, tag, comm, stream),
               infinicclSuccess);
      CHECK(g_sim->StreamSynchronize(stream).ok());
      continue;
    }
    std::vector<std::unique_ptr<DeviceBuffer>> got;
    std::vector<int> from(g_n - 1, -7);
    for (int k = 0; k < g_n - 1; ++k) {
      got.push_back(std::make_unique<DeviceBuffer>(count * Info(dt).size));
      CHECK_RC(infinicclRecvTagged(got[k]->ptr, count, dt, INFINICCL_ANY_SOURCE, tag, &from[k],
                                   comm, stream),
               infinicclSuccess);
    }
    CHECK(g_sim->StreamSynchronize(stream).ok());
    std::set<int> seen;
    for (int k = 0; k < g_n - 1; ++k) {
      CHECK(from[k] >= 0 && from[k] < g_n && from[k] != rank && seen.insert(from[k]).second,
            "sim any source, %zu elements: sender %d reported for receive %d", count,
            from[k], k);
      if (from[k] >= 0 && from[k] < g_n) {
        CHECK(Wrong(dt, 95 + receiver, from[k], got[k]->Download().data(), count) == 0,
              "sim any source, %zu elements: data is not rank %d's", count, from[k]);
      }
    }
  }
  g_sim->StreamDestroy(stream);
  Barrier(comm);
}

// TestAnySourceGrouped on device buffers.
void TestSimAnySourceGrouped(infinicclComm_t comm, int rank, size_t count) {
  const infinicclDataType_t dt = infinicclInt16;
  void *stream = nullptr;
  CHECK(g_sim->StreamCreate(&stream).ok());
  std::vector<std::vector<unsigned char>> send(g_n);
  std::vector<std::unique_ptr<DeviceBuffer>> dsend(g_n), got;
  std::vector<int> from(g_n - 1, -7);
  CHECK_RC(infinicclGroupStart(), infinicclSuccess);
  for (int p = 0; p < g_n; ++p) {
    if (p == rank) continue;
    send[p] = Pattern(dt, 97 + p, rank, count);
    dsend[p] = std::make_unique<DeviceBuffer>(send[p].size());
    dsend[p]->UploadAsync(send[p], stream);
    CHECK_RC(infinicclSendTagged(dsend[p]->ptr, count, dt, p, 78, comm, stream),
             infinicclSuccess);
  }
  for (int k = 0; k < g_n - 1; ++k) {
    got.push_back(std::make_unique<DeviceBuffer>(count * Info(dt).size));
    CHECK_RC(infinicclRecvTagged(got[k]->ptr, count, dt, INFINICCL_ANY_SOURCE, 78, &from[k],
                                 comm, stream),
             infinicclSuccess);
  }
  CHECK_RC(infinicclGroupEnd(), infinicclSuccess);
  CHECK(g_sim->StreamSynchronize(stream).ok());
  std::set<int> seen;
  for (int k = 0; k < g_n - 1; ++k) {
    CHECK(from[k] >= 0 && from[k] < g_n && from[k] != rank && seen.insert(from[k]).second,
          "sim grouped any source: sender %d reported for receive %d", from[k], k);
    if (from[k] >= 0 && from[k] < g_n) {
      CHECK(Wrong(dt, 97 + rank, from[k], got[k]->Download().data(), count) == 0,
            "sim grouped any source: data is not rank %d's", from[k]);
    }
  }
  g_sim->StreamDestroy(stream);
  Barrier(comm);
}
#endif

}  // namespace

int main(int argc, char **argv) {
  const std::string mode = argc > 1 ? argv[1] : "host";
  const bool own_mpi = mode == "host-serialized";
  if (own_mpi) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  }
  if (infinicclInit(&argc, &argv) != infinicclSuccess) return 2;
  const bool sim = mode == "sim" || mode == "sim-direct";
#if defined(ITEST_SIM)
  if (sim) EnableSim();
#else
  if (sim) return 2;
#endif
  infinicclComm_t comm = nullptr;
  if (infinicclCommInitAll(&comm, 0, nullptr) != infinicclSuccess) return 2;
  int rank = 0;
  infinicclCommUserRank(comm, &rank);
  infinicclCommCount(comm, &g_n);
  g_rank = rank;

  if (g_n == 1) {
    TestOneRank(comm);
  } else if (sim) {
#if defined(ITEST_SIM)
    TestSimTagsReversed(comm, rank, true, size_t{1} << 20);
    TestSimTagsReversed(comm, rank, false, 100);
    TestSimAnySource(comm, rank, 16);       // one chunk
    TestSimAnySource(comm, rank, 4099);     // pipelined in chunks of a few KiB
    TestSimAnySourceGrouped(comm, rank, 4099);
#endif
  } else {
    TestTagsReversed(comm, rank, true, size_t{1} << 20);
    TestTagsReversed(comm, rank, false, 100);
    TestAnySourceBlocking(comm, rank, 10);
    TestAnySourceBlocking(comm, rank, size_t{1} << 18);
    TestAnySourceGrouped(comm, rank, size_t{1} << 18);
    TestTagZero(comm, rank);
    TestTagMax(comm, rank);
    TestInvalid(comm, rank);
  }
  CHECK_RC(infinicclCommDestroy(comm), infinicclSuccess);
  const long total = TotalFailures();
  if (rank == 0) std::printf("test_tagged %s: %ld failures\n", mode.c_str(), total);
  if (infinicclFinalize() != infinicclSuccess) return 1;
  if (own_mpi) MPI_Finalize();
  return total == 0 ? 0 : 1;
}
