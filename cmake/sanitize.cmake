# TUTTI_SANITIZE: a sanitizer for every target of this project, compiled and linked in:
# address (ASan), undefined (UBSan) or thread (TSan); empty, the default, for none.
# UBSan stops at its first finding (-fno-sanitize-recover=all), so that it fails the
# test rather than printing a line nobody reads. libuv, UCX, Criterion and the C++
# library stay uninstrumented, as Debian builds them. (The fuzz targets, a project of
# their own, always have address and undefined.) scripts/dev.sh test builds the
# thread-heavy tests with thread into build-tsan and runs them (tests/tsan.supp).
set(TUTTI_SANITIZE "" CACHE STRING "Build with a sanitizer: address, undefined or thread (empty: none)")
set(tutti_sanitizers address undefined thread)
set_property(CACHE TUTTI_SANITIZE PROPERTY STRINGS "" ${tutti_sanitizers})
if(TUTTI_SANITIZE)
  if(NOT TUTTI_SANITIZE IN_LIST tutti_sanitizers)
    message(FATAL_ERROR "tutti: TUTTI_SANITIZE=${TUTTI_SANITIZE} is not a sanitizer tutti builds with; "
                        "use address, undefined or thread, or leave it empty for none")
  endif()
  set(sanitize_flags -fsanitize=${TUTTI_SANITIZE} -fno-omit-frame-pointer)
  if(TUTTI_SANITIZE STREQUAL "undefined")
    list(APPEND sanitize_flags -fno-sanitize-recover=all)
  endif()
  add_compile_options(${sanitize_flags})
  # GCC 12 warns that TSan does not model std::atomic_thread_fence (clang ignores fences
  # just as silently). tutti's fences order only atomics: the seqlock of
  # health/op_history.cc, whose every field is atomic, and the Dekker check of
  # transport/shm/signal.h's sleepers. TSan reports no race on an atomic, so the fence
  # it cannot see hides nothing from it there.
  if(TUTTI_SANITIZE STREQUAL "thread" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-Wno-tsan)
  endif()
  add_link_options(${sanitize_flags})
  message(STATUS "tutti: sanitizer ${TUTTI_SANITIZE} (${sanitize_flags})")
endif()
