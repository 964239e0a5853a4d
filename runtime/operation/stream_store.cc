#include "runtime/operation/stream_store.h"

#include <emmintrin.h>

#include <cstdint>
#include <cstring>

namespace tutti {

void copy_streaming(void* dst, const void* src, size_t bytes) {
  stream_unfenced(dst, src, bytes);
  fence_streaming();
}

void stream_unfenced(void* dst, const void* src, size_t bytes) {
  auto* out = static_cast<unsigned char*>(dst);
  const auto* in = static_cast<const unsigned char*>(src);
  // Streaming stores need a 16-byte aligned destination: copy up to it normally.
  size_t head = (16 - (reinterpret_cast<uintptr_t>(out) & 15)) & 15;
  if (head > bytes) head = bytes;
  std::memcpy(out, in, head);
  out += head;
  in += head;
  bytes -= head;
  // SSE2 is in every x86-64, so this needs no dispatch; 16-byte streaming stores fill
  // the write-combining buffers as fast as wider ones.
  size_t blocks = bytes / 64;
  for (size_t i = 0; i < blocks; ++i, out += 64, in += 64) {
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 16));
    __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 32));
    __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(out), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + 48), d);
  }
  std::memcpy(out, in, bytes % 64);
}

void fence_streaming() { _mm_sfence(); }

}  // namespace tutti
