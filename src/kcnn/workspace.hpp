// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file workspace.hpp
/// \brief The scratch-memory budget of algorithms that need scratch (Im2colGemm,
///        TensorCoreGemm on float tensors, Tiled on host backends), and how to give the
///        cached scratch back.
///
/// Im2colGemm unrolls the input into a scratch matrix. It processes the batch in chunks
/// whose scratch stays within a budget: Conv2dParams::workspace_limit_bytes for one call,
/// or, where that is 0, the process-wide limit set here (default 256 MiB).
/// TensorCoreGemm on float tensors packs the weights in the order its tensor-core
/// instructions read them (M rounded up to 64 or 128, C*R*S to 16; 4 bytes each: 9.4 MB
/// for 512 3x3 filters of 512 channels) and refuses a budget below that; on layers too
/// small to fill the GPU it splits the reduction into slices whose partial sums (slices x
/// the output's elements) it keeps there too, where the budget leaves room for them.
/// Tiled on host backends packs the weights of unpooled NHWC float and double calls in
/// blocks of output channels for its register-blocked kernel (M rounded up to whole
/// blocks of up to 64 filters, C to whole channel blocks: a little more than the weights,
/// about 9.6 MB for 512 3x3 filters of 512 float channels) and refuses a budget below
/// that too; Auto then picks an algorithm that fits.
///
/// The scratch is cached and reused across calls instead of being allocated per call:
/// one buffer per execution-space instance (per CUDA stream; one for a host backend),
/// grown to the largest size asked for. Calls on the same instance are stream-ordered
/// and may share its buffer while earlier calls still run; calls on different
/// instances use different buffers. A call holds its instance's buffer (a mutex) while
/// it enqueues work, so host threads sharing one instance take turns. Growing a buffer
/// fences that instance. Kokkos::finalize frees every buffer. A buffer is keyed by its
/// stream's handle and outlives the stream: fence an instance before destroying its
/// stream (a stream created later may get the same handle and reuse the buffer), and
/// call release_workspaces() to free the buffers of streams that are gone.
///
/// A convolution with a fused pooling (Conv2dParams::pool) whose algorithm has no fused
/// kernel keeps the unpooled output in a second cached buffer per instance, of the
/// unpooled output's size; it is not bound by the budget (it replaces a per-call
/// allocation of the same size) and release_workspaces() frees it too.
#pragma once

#include <cstddef>

#include "impl/common/workspace_cache.hpp"

namespace kcnn {

/// The budget used when no per-call limit is given: 256 MiB.
inline constexpr std::size_t default_workspace_limit = Impl::kDefaultWorkspaceLimit;

/// Sets the process-wide scratch budget, in bytes, of calls whose
/// Conv2dParams::workspace_limit_bytes is 0; 0 restores the default (256 MiB).
/// Thread-safe; affects calls that start afterwards.
inline void set_workspace_limit(std::size_t bytes) {
  Impl::workspace_limit_value().store(bytes == 0 ? default_workspace_limit : bytes);
}

/// The process-wide scratch budget in bytes.
inline std::size_t workspace_limit() {
  return Impl::workspace_limit_value().load();
}

/// Frees all cached scratch buffers. Fences every execution space first (work still
/// running may use them), so call it between phases, not in a hot loop.
inline void release_workspaces() {
  Impl::WorkspaceRegistry::instance().release_all();
}

}  // namespace kcnn
