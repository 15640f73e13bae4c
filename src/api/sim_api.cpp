// The public API of the EMULATED device (include/infiniccl/infiniccl_sim.h):
// thin entry points over the registry's SimRuntime, in the usual frame
// (ApiCall: codes and infinicclGetLastError, never an abort). No
// Runtime::CheckActive: the emulated device needs no MPI, so these work
// before infinicclInit and after infinicclFinalize.
//
// What the runtime does not do by itself is done here:
//  - events are tracked, so a destroyed or foreign event is refused, and an
//    event destroyed while a record of (or wait for) it is still queued is
//    freed only once its streams have passed those (a HostFunc queued after
//    each one counts them down);
//  - streams made here are remembered (StreamDestroy refuses others);
//  - graphs made by a capture are handles kept here until destroyed (a
//    captured record of or wait for an event holds the event itself, so
//    it is not counted as queued).
#include <infiniccl/infiniccl_sim.h>

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "api/api_call.h"
#include "device/registry.h"
#include "device/sim/sim_runtime.h"

using namespace infiniccl;

namespace {

Status Emulated(SimRuntime **sim) {
  auto *rt = static_cast<SimRuntime *>(DeviceRegistry::Get(DeviceKind::kSim));
  if (rt == nullptr) {
    return Status(infinicclInvalidUsage,
                  "the emulated device is not enabled: set INFINICCL_DEVICE=sim in the "
                  "environment before the program's first InfiniCCL call");
  }
  *sim = rt;
  return Status::Ok();
}

struct TrackedEvent {
  int queued = 0;          // records and waits still queued on some stream
  bool destroyed = false;  // by the user; freed when `queued` reaches 0
};

struct Tracking {
  std::mutex mutex;
  std::map<void *, TrackedEvent> events;
  std::set<void *> streams;  // made by infinicclSimStreamCreate, not destroyed
  std::map<void *, std::shared_ptr<SimGraph>> graphs;  // by infinicclSimStreamEndCapture
};

Tracking &T() {
  static Tracking *t = new Tracking();  // never destroyed: stream workers use it at exit
  return *t;
}

Status NotAnEvent(const void *event) {
  return MakeStatus(infinicclInvalidArgument,
                    "%p is not an emulated-device event (destroyed, or not made by "
                    "infinicclSimEventCreate)",
                    event);
}

// One queued record of / wait for `event` has run (or was never queued).
void Release(SimRuntime *sim, void *event) {
  bool free_it = false;
  {
    std::lock_guard<std::mutex> lock(T().mutex);
    auto it = T().events.find(event);
    if (it == T().events.end()) return;
    if (--it->second.queued == 0 && it->second.destroyed) {
      T().events.erase(it);
      free_it = true;
    }
  }
  if (free_it) (void)sim->EventDestroy(event);
}

// EventRecord or StreamWaitEvent, with the event counted while queued.
Status QueueOnEvent(SimRuntime *sim, void *event, void *stream, bool record) {
  if (event == nullptr) return Status(infinicclInvalidArgument, "event is NULL");
  {
    std::lock_guard<std::mutex> lock(T().mutex);
    auto it = T().events.find(event);
    if (it == T().events.end() || it->second.destroyed) return NotAnEvent(event);
  }
  bool capturing = false;
  INFINICCL_RETURN_IF_ERROR(sim->StreamIsCapturing(stream, &capturing));
  if (capturing) {
    return record ? sim->EventRecord(event, stream) : sim->StreamWaitEvent(stream, event);
  }
  {
    std::lock_guard<std::mutex> lock(T().mutex);
    auto it = T().events.find(event);
    if (it == T().events.end() || it->second.destroyed) return NotAnEvent(event);
    ++it->second.queued;
  }
  Status st = record ? sim->EventRecord(event, stream) : sim->StreamWaitEvent(stream, event);
  if (!st.ok()) {
    Release(sim, event);
    return MakeStatus(st.code(), "%p is not an emulated-device stream (destroyed, or not "
                      "made by infinicclSimStreamCreate)", stream);
  }
  // FIFO: this runs after the record or wait, so the event outlives it.
  st = sim->HostFunc(stream, [sim, event] { Release(sim, event); });
  if (!st.ok()) Release(sim, event);  // the stream went away meanwhile
  return Status::Ok();
}

// A user's event, not destroyed: checked under the tracking lock.
Status UserEvent(void *event) {
  if (event == nullptr) return Status(infinicclInvalidArgument, "event is NULL");
  std::lock_guard<std::mutex> lock(T().mutex);
  auto it = T().events.find(event);
  if (it == T().events.end() || it->second.destroyed) return NotAnEvent(event);
  return Status::Ok();
}

Status NotAGraph(const void *graph) {
  return MakeStatus(infinicclInvalidArgument,
                    "%p is not an emulated-device graph (destroyed, or not made by "
                    "infinicclSimStreamEndCapture)",
                    graph);
}

// The emulated device and the graph `graph` names.
Status EmulatedGraph(void *graph, SimRuntime **sim, std::shared_ptr<SimGraph> *out) {
  INFINICCL_RETURN_IF_ERROR(Emulated(sim));
  std::lock_guard<std::mutex> lock(T().mutex);
  auto it = T().graphs.find(graph);
  if (it == T().graphs.end()) return NotAGraph(graph);
  *out = it->second;
  return Status::Ok();
}

// A new stream or event: made by `make`, remembered by `keep` (under the
// tracking lock), then handed out through `out`.
template <typename Make, typename Keep>
Status MakeTracked(void **out, const char *name, Make make, Keep keep) {
  if (out == nullptr) return MakeStatus(infinicclInvalidArgument, "%s is NULL", name);
  *out = nullptr;
  SimRuntime *sim = nullptr;
  INFINICCL_RETURN_IF_ERROR(Emulated(&sim));
  void *made = nullptr;
  INFINICCL_RETURN_IF_ERROR(make(*sim, &made));
  std::lock_guard<std::mutex> lock(T().mutex);
  keep(made);
  *out = made;
  return Status::Ok();
}

// An entry point whose work needs the emulated device only.
template <typename F>
infinicclResult_t WithSim(const char *function, F &&work) {
  return ApiCall(function, [&](CallContext &) -> Status {
    SimRuntime *sim = nullptr;
    INFINICCL_RETURN_IF_ERROR(Emulated(&sim));
    return work(*sim);
  });
}

}  // namespace

extern "C" {

infinicclResult_t infinicclSimMalloc(void **ptr, size_t bytes) {
  return ApiCall("infinicclSimMalloc", [&](CallContext &) -> Status {
    if (ptr == nullptr) return Status(infinicclInvalidArgument, "ptr is NULL");
    *ptr = nullptr;
    SimRuntime *sim = nullptr;
    INFINICCL_RETURN_IF_ERROR(Emulated(&sim));
    return sim->Malloc(ptr, bytes);
  });
}

infinicclResult_t infinicclSimFree(void *ptr) {
  return ApiCall("infinicclSimFree", [&](CallContext &) -> Status {
    SimRuntime *sim = nullptr;
    INFINICCL_RETURN_IF_ERROR(Emulated(&sim));
    if (ptr == nullptr) return Status::Ok();
    if (!sim->Owns(ptr)) {
      return MakeStatus(infinicclInvalidArgument,
                        "%p is not emulated-device memory (freed already, or not from "
                        "infinicclSimMalloc)",
                        ptr);
    }
    // SimRuntime::Free synchronises every stream first (cudaFree's implicit
    // synchronisation: nothing queued may still use it), and refuses a
    // pointer inside an allocation.
    return sim->Free(ptr);
  });
}

infinicclResult_t infinicclSimMemcpy(void *dst, const void *src, size_t bytes,
                                     void *stream) {
  return ApiCall("infinicclSimMemcpy", [&](CallContext &) -> Status {
    SimRuntime *sim = nullptr;
    INFINICCL_RETURN_IF_ERROR(Emulated(&sim));
    if (bytes == 0) return Status::Ok();
    if (dst == nullptr || src == nullptr) {
      return Status(infinicclInvalidArgument, "dst or src is NULL");
    }
    const bool dst_dev = sim->Owns(dst), src_dev = sim->Owns(src);
    if (!dst_dev && !src_dev) {
      return MakeStatus(infinicclInvalidArgument,
                        "neither dst %p nor src %p is emulated-device memory (from "
                        "infinicclSimMalloc)",
                        dst, src);
    }
    const CopyKind kind = dst_dev && src_dev ? CopyKind::kDeviceToDevice
                          : dst_dev          ? CopyKind::kHostToDevice
                                             : CopyKind::kDeviceToHost;
    // Checks the stream and that each device side lies inside one allocation.
    INFINICCL_RETURN_IF_ERROR(sim->MemcpyAsync(dst, src, bytes, kind, stream));
    if (stream == nullptr) return sim->StreamSynchronize(nullptr);
    return Status::Ok();
  });
}

infinicclResult_t infinicclSimStreamCreate(void **stream) {
  return ApiCall("infinicclSimStreamCreate", [&](CallContext &) -> Status {
    return MakeTracked(
        stream, "stream", [](SimRuntime &sim, void **s) { return sim.StreamCreate(s); },
        [](void *s) { T().streams.insert(s); });
  });
}

infinicclResult_t infinicclSimStreamDestroy(void *stream) {
  return ApiCall("infinicclSimStreamDestroy", [&](CallContext &) -> Status {
    SimRuntime *sim = nullptr;
    INFINICCL_RETURN_IF_ERROR(Emulated(&sim));
    if (stream == nullptr) {
      return Status(infinicclInvalidArgument,
                    "stream is NULL (the default stream cannot be destroyed)");
    }
    {
      std::lock_guard<std::mutex> lock(T().mutex);
      T().streams.erase(stream);
    }
    // Refuses a stream the runtime does not know (destroyed, foreign).
    return sim->StreamDestroy(stream);
  });
}

infinicclResult_t infinicclSimStreamSynchronize(void *stream) {
  return WithSim("infinicclSimStreamSynchronize",
                 [&](SimRuntime &sim) { return sim.StreamSynchronize(stream); });
}

infinicclResult_t infinicclSimEventCreate(void **event) {
  return ApiCall("infinicclSimEventCreate", [&](CallContext &) -> Status {
    return MakeTracked(
        event, "event", [](SimRuntime &sim, void **e) { return sim.EventCreate(e); },
        [](void *e) { T().events[e] = TrackedEvent{}; });
  });
}

infinicclResult_t infinicclSimEventRecord(void *event, void *stream) {
  return WithSim("infinicclSimEventRecord", [&](SimRuntime &sim) {
    return QueueOnEvent(&sim, event, stream, /*record=*/true);
  });
}

infinicclResult_t infinicclSimStreamWaitEvent(void *stream, void *event) {
  return WithSim("infinicclSimStreamWaitEvent", [&](SimRuntime &sim) {
    return QueueOnEvent(&sim, event, stream, /*record=*/false);
  });
}

infinicclResult_t infinicclSimEventSynchronize(void *event) {
  return ApiCall("infinicclSimEventSynchronize", [&](CallContext &) -> Status {
    SimRuntime *sim = nullptr;
    INFINICCL_RETURN_IF_ERROR(Emulated(&sim));
    INFINICCL_RETURN_IF_ERROR(UserEvent(event));
    return sim->EventSynchronize(event);
  });
}

infinicclResult_t infinicclSimEventQuery(void *event, int *done) {
  return ApiCall("infinicclSimEventQuery", [&](CallContext &) -> Status {
    if (done == nullptr) return Status(infinicclInvalidArgument, "done is NULL");
    SimRuntime *sim = nullptr;
    INFINICCL_RETURN_IF_ERROR(Emulated(&sim));
    INFINICCL_RETURN_IF_ERROR(UserEvent(event));
    bool d = false;
    INFINICCL_RETURN_IF_ERROR(sim->EventQuery(event, &d));
    *done = d ? 1 : 0;
    return Status::Ok();
  });
}

infinicclResult_t infinicclSimEventDestroy(void *event) {
  return ApiCall("infinicclSimEventDestroy", [&](CallContext &) -> Status {
    SimRuntime *sim = nullptr;
    INFINICCL_RETURN_IF_ERROR(Emulated(&sim));
    if (event == nullptr) return Status(infinicclInvalidArgument, "event is NULL");
    {
      std::lock_guard<std::mutex> lock(T().mutex);
      auto it = T().events.find(event);
      if (it == T().events.end() || it->second.destroyed) return NotAnEvent(event);
      if (it->second.queued > 0) {
        it->second.destroyed = true;  // the last Release frees it
        return Status::Ok();
      }
      T().events.erase(it);
    }
    return sim->EventDestroy(event);
  });
}

infinicclResult_t infinicclSimKernel(void *stream, unsigned microseconds) {
  return WithSim("infinicclSimKernel",
                 [&](SimRuntime &sim) { return sim.Kernel(stream, microseconds); });
}

infinicclResult_t infinicclSimStreamBeginCapture(void *stream) {
  return WithSim("infinicclSimStreamBeginCapture",
                 [&](SimRuntime &sim) { return sim.BeginCapture(stream); });
}

infinicclResult_t infinicclSimStreamEndCapture(void *stream, void **graph) {
  return ApiCall("infinicclSimStreamEndCapture", [&](CallContext &) -> Status {
    if (graph == nullptr) return Status(infinicclInvalidArgument, "graph is NULL");
    *graph = nullptr;
    SimRuntime *sim = nullptr;
    INFINICCL_RETURN_IF_ERROR(Emulated(&sim));
    std::shared_ptr<SimGraph> g;
    INFINICCL_RETURN_IF_ERROR(sim->EndCapture(stream, &g));
    std::lock_guard<std::mutex> lock(T().mutex);
    *graph = g.get();
    T().graphs.emplace(g.get(), std::move(g));
    return Status::Ok();
  });
}

infinicclResult_t infinicclSimStreamIsCapturing(void *stream, int *capturing) {
  return ApiCall("infinicclSimStreamIsCapturing", [&](CallContext &) -> Status {
    if (capturing == nullptr) return Status(infinicclInvalidArgument, "capturing is NULL");
    *capturing = 0;
    SimRuntime *sim = nullptr;
    INFINICCL_RETURN_IF_ERROR(Emulated(&sim));
    bool c = false;
    INFINICCL_RETURN_IF_ERROR(sim->StreamIsCapturing(stream, &c));
    *capturing = c ? 1 : 0;
    return Status::Ok();
  });
}

infinicclResult_t infinicclSimGraphNodes(void *graph, size_t *nodes) {
  return ApiCall("infinicclSimGraphNodes", [&](CallContext &) -> Status {
    if (nodes == nullptr) return Status(infinicclInvalidArgument, "nodes is NULL");
    *nodes = 0;
    SimRuntime *sim = nullptr;
    std::shared_ptr<SimGraph> g;
    INFINICCL_RETURN_IF_ERROR(EmulatedGraph(graph, &sim, &g));
    *nodes = g->nodes.size();
    return Status::Ok();
  });
}

infinicclResult_t infinicclSimGraphLaunch(void *graph, void *stream) {
  return ApiCall("infinicclSimGraphLaunch", [&](CallContext &) -> Status {
    SimRuntime *sim = nullptr;
    std::shared_ptr<SimGraph> g;
    INFINICCL_RETURN_IF_ERROR(EmulatedGraph(graph, &sim, &g));
    return sim->LaunchGraph(*g, stream);
  });
}

infinicclResult_t infinicclSimGraphDestroy(void *graph) {
  return ApiCall("infinicclSimGraphDestroy", [&](CallContext &) -> Status {
    SimRuntime *sim = nullptr;
    INFINICCL_RETURN_IF_ERROR(Emulated(&sim));
    std::lock_guard<std::mutex> lock(T().mutex);
    // Launches already queued keep their own copies of the work.
    return T().graphs.erase(graph) == 0 ? NotAGraph(graph) : Status::Ok();
  });
}

}  // extern "C"
