#include "oracle/case_buffer.h"

#include <cstdlib>

namespace braid::oracle {

CaseBuffer::CaseBuffer(ncclComm_t comm, int rank, size_t bytes, Registration how) : comm_(comm) {
  const size_t size = bytes ? bytes : 1;
  const bool registers = how == Registration::kRegister || how == Registration::kWindow ||
                         (how == Registration::kEvenRanks && rank % 2 == 0);
  shared_ = how != Registration::kNone;
  if (shared_) {
    void* p = nullptr;
    if (ncclMemAlloc(&p, size) != ncclSuccess) {
      error_ = std::string("ncclMemAlloc: ") + ncclGetLastError(nullptr);
      shared_ = false;
    }
    data_ = static_cast<unsigned char*>(p);
  }
  if (!data_) data_ = static_cast<unsigned char*>(malloc(size));
  if (!registers || !error_.empty()) return;
  window_ = how == Registration::kWindow;
  ncclResult_t r =
      window_ ? ncclCommWindowRegister(comm, data_, size, reinterpret_cast<ncclWindow_t*>(&handle_),
                                       NCCL_WIN_COLL_SYMMETRIC)
              : ncclCommRegister(comm, data_, size, &handle_);
  if (r != ncclSuccess) {
    error_ = std::string(window_ ? "ncclCommWindowRegister: " : "ncclCommRegister: ") +
             ncclGetLastError(comm);
    handle_ = nullptr;
  }
}

CaseBuffer::~CaseBuffer() {
  if (handle_) {
    ncclResult_t r = window_ ? ncclCommWindowDeregister(comm_, static_cast<ncclWindow_t>(handle_))
                             : ncclCommDeregister(comm_, handle_);
    (void)r;  // a failed communicator may refuse; the memory is freed either way
  }
  if (shared_)
    ncclMemFree(data_);
  else
    free(data_);
}

}  // namespace braid::oracle
