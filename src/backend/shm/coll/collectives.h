// The shared-memory collectives, one file each, on the channel and the
// chunk pipeline (shm_pipeline.h): AllReduce, ReduceScatter, Reduce,
// AllGather, Broadcast, Gather, Scatter and AllToAll. Each runs one call on
// every rank of the channel; a refused call (descriptors that differ)
// returns InvalidUsage having written no receive buffer. Every kind but
// AllReduce is a policy of RunChunks. The blocks of one chunk share a stage
// where a rank sends a block to each rank (ReduceScatter, Scatter,
// AllToAll: block j at j * cap); the others give a chunk the whole stage.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/shm/shm_pipeline.h"

namespace infiniccl {
namespace shm {

// Each chunk: every rank copies its input in, reduces its slice over every
// rank's copy, and copies every reduced slice out; pipelined one chunk deep.
// Both buffers Place::kDeviceLanded: the call reduces in the landing areas.
Status AllReduce(Call &c);
// Rank j reduces block j over every rank's copy.
Status ReduceScatter(Call &c);
// The root reduces every rank's copy.
Status Reduce(Call &c);
// Each rank copies its block in; every rank copies the others' out.
Status AllGather(Call &c);
// The root copies in; every other rank copies out.
Status Broadcast(Call &c);
// Every rank but the root copies its block in; the root copies every block
// out.
Status Gather(Call &c);
// The root copies every other rank's block in; each rank copies its own out.
Status Scatter(Call &c);
// Each rank copies every block but its own in; every rank copies its block
// of every peer's stage out.
Status AllToAll(Call &c);

// A host AllReduce of more chunks than this copies its input into the
// stages with streaming stores. Each stage is written again two chunks
// after the other ranks read it, and a normal store to a line another
// core still holds waits for that core to give it up: 2-3x the time
// when the VM's two cores move data slowly. Smaller calls keep normal
// stores, whose lines the other rank then reads from a shared cache
// (docs/PERFORMANCE.md, "Shared memory on a node").
constexpr size_t kStreamFromChunks = 4;
// Where in its stage a one-chunk AllReduce of `bytes` works: a window
// that moves on with every call through the whole stage, so that the
// lines a rank writes were last touched many calls ago and are no longer
// in the other cores' caches (a write to a line another core holds waits
// for that core to drop it). 0 (the stage's start) below
// kRotateFromBytes, where the lines a call reuses stay in this core's
// cache and fresh ones cost more, and above kRotateToBytes, where
// windows measured no faster (docs/PERFORMANCE.md, "Shared memory on a
// node").
size_t Window(size_t bytes, uint32_t chunk);
constexpr size_t kRotateFromBytes = size_t{32} << 10;
constexpr size_t kRotateToBytes = size_t{256} << 10;

}  // namespace shm
}  // namespace infiniccl
