#include "runtime/rendezvous/init_cancel.h"

#include "runtime/common/error.h"

namespace tutti::rendezvous {

void InitCancel::cancel(const std::string& why) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (requested()) return;
  why_ = why;
  requested_.store(true, std::memory_order_release);
  if (client_ != nullptr) client_->shutdown(Status::kAborted, why_);
}

void InitCancel::check() const {
  if (!requested()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  fail(Status::kAborted, why_);
}

void InitCancel::watch(store::Client* client) {
  std::lock_guard<std::mutex> lock(mutex_);
  client_ = client;
  if (client_ != nullptr && requested()) client_->shutdown(Status::kAborted, why_);
}

}  // namespace tutti::rendezvous
