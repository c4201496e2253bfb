# TAPEGRAD_PRECOMPILE_HEADERS: the third-party headers every translation unit reaches (xtensor with
# xsimd, since core/tensor.h holds xt::xarray; TBB; GoogleTest in the tests) are parsed once per group
# of targets instead of once per .cpp: they are about 200k lines a TU, most of a small TU's time.
# Third-party headers only: ours change often, and a header of ours that forgot an include would
# still compile here but not for a user.
#
# gcc (and clang) accept a precompiled header only from a compile with the same code-generation
# flags, so there is one per flag set: the libraries (-fPIC) share one, the test executables (-fPIE,
# GTEST_HAS_PTHREAD) another. The headers are PRIVATE: nothing of this reaches the installed
# package (tests/downstream_package.sh builds against it without them).
option(TAPEGRAD_PRECOMPILE_HEADERS "Precompile the heavy third-party headers (xtensor, xsimd, TBB, GoogleTest)" ON)

# autograd/memory/array_allocator.h comes first, before any xtensor header: it defines
# XTENSOR_DEFAULT_ALLOCATOR (tapegrad's xt::xarray allocator). The exception to "third-party only".
# Targets with a precompiled header are marked TAPEGRAD_PCH: for them the PCH carries that header,
# and the forced include autograd/CMakeLists.txt gives every other consumer is left out (gcc ignores
# a PCH that is not the first include, and CMake puts target compile options before the PCH's -include).
set(TAPEGRAD_PCH_HEADERS
    "${PROJECT_SOURCE_DIR}/autograd/memory/array_allocator.h"
    <algorithm> <cmath> <functional> <memory> <optional> <string> <vector>
    <xtensor/xarray.hpp> <xtensor/xview.hpp> <xtensor/xmath.hpp> <xtensor/xbuilder.hpp>
    <xsimd/xsimd.hpp>
    <tbb/parallel_for.h> <tbb/blocked_range.h>)

# Gives `target` the precompiled header of `group` ("library" or "test"): the first target of a
# group compiles it, the later ones reuse that one.
function(tapegrad_share_precompiled_headers target group)
  if(NOT TAPEGRAD_PRECOMPILE_HEADERS)
    return()
  endif()
  set_target_properties(${target} PROPERTIES TAPEGRAD_PCH ON)
  get_property(owner GLOBAL PROPERTY TAPEGRAD_PCH_OWNER_${group})
  if(owner)
    target_precompile_headers(${target} REUSE_FROM ${owner})
    return()
  endif()
  set(headers ${TAPEGRAD_PCH_HEADERS})
  if(group STREQUAL "test")
    list(APPEND headers <gtest/gtest.h>)
  endif()
  target_precompile_headers(${target} PRIVATE ${headers})
  set_property(GLOBAL PROPERTY TAPEGRAD_PCH_OWNER_${group} ${target})
endfunction()
