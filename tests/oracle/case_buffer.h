// Storage of one oracle case's send or receive buffer: plain memory, or ncclMemAlloc memory the
// ranks register with the communicator so zero-copy algorithms read it in place.
#pragma once

#include <cstddef>
#include <string>

#include "nccl.h"

namespace braid::oracle {

enum class Registration {
  kNone,
  kRegister,   ///< ncclMemAlloc + ncclCommRegister on every rank
  kWindow,     ///< ncclMemAlloc + ncclCommWindowRegister (collective) on every rank
  kEvenRanks,  ///< ncclCommRegister on even ranks only: the collective must notice
};

class CaseBuffer {
 public:
  /// `bytes` may be 0 (one byte is still allocated, so data() is never null).
  CaseBuffer(ncclComm_t comm, int rank, size_t bytes, Registration how);
  ~CaseBuffer();
  CaseBuffer(const CaseBuffer&) = delete;
  CaseBuffer& operator=(const CaseBuffer&) = delete;

  unsigned char* data() { return data_; }
  /// "" when allocation and registration worked, else what failed.
  const std::string& error() const { return error_; }

 private:
  ncclComm_t comm_;
  bool shared_ = false;
  bool window_ = false;
  void* handle_ = nullptr;
  unsigned char* data_ = nullptr;
  std::string error_;
};

}  // namespace braid::oracle
