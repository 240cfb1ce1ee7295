// The results file: one per worker run, every rank's output of every call, so that two runs
// (NVIDIA's NCCL and Braid, in separate processes) can be compared after both have exited.
//
//   FileHeader, then records: RecordHeader followed by `bytes` bytes, the output elements
//   (status 0) or the library's error text (status != 0).
//
// Native byte order and layout: both files are written on the machine that compares them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "cases.h"

namespace braid::validate_nccl {

inline constexpr char kMagic[8] = {'B', 'R', 'V', 'N', 'C', 'C', 'L', '1'};

struct FileHeader {
  char magic[8];
  std::int32_t nranks = 0;
  std::int32_t libraryVersion = 0;  ///< ncclGetVersion
  std::uint64_t seed = 0;
  std::uint32_t collMask = 0;  ///< bit c: collective c ran (the library has it)
  std::int32_t memory = 0;     ///< 0 host, 1 device
  char library[240] = {};      ///< the dlopened path, for the report
};

struct RecordHeader {
  CaseKey key;
  std::int32_t status = 0;  ///< ncclResult_t of the call
  std::int32_t reserved = 0;
  std::uint64_t bytes = 0;
};

class ResultsWriter {
 public:
  /// Opens path for writing; throws std::runtime_error on failure.
  ResultsWriter(const std::string& path, const FileHeader& header);
  ~ResultsWriter();
  ResultsWriter(const ResultsWriter&) = delete;
  ResultsWriter& operator=(const ResultsWriter&) = delete;

  void write(const RecordHeader& header, const void* data);
  /// Flushes and closes; throws when any write failed (a full disk must not pass as a result).
  void close();

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

/// A results file's header and the offset of each record, read without loading the data.
class ResultsReader {
 public:
  /// Throws std::runtime_error with the file name on a bad magic or a truncated record.
  explicit ResultsReader(const std::string& path);
  ~ResultsReader();
  ResultsReader(const ResultsReader&) = delete;
  ResultsReader& operator=(const ResultsReader&) = delete;

  const FileHeader& header() const { return header_; }
  const std::map<CaseKey, RecordHeader>& records() const { return records_; }
  /// The payload of the record with key (error text, or output bytes).
  std::vector<unsigned char> payload(const CaseKey& key) const;
  std::string errorText(const CaseKey& key) const;

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  FileHeader header_;
  std::map<CaseKey, RecordHeader> records_;
  std::map<CaseKey, long> offsets_;  ///< where each payload starts
};

}  // namespace braid::validate_nccl
