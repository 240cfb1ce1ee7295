#include "results.h"

#include <cstring>
#include <stdexcept>

namespace braid::validate_nccl {

ResultsWriter::ResultsWriter(const std::string& path, const FileHeader& header) : path_(path) {
  file_ = std::fopen(path.c_str(), "wb");
  if (!file_) throw std::runtime_error("cannot write " + path);
  FileHeader h = header;
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  std::fwrite(&h, sizeof h, 1, file_);
}

ResultsWriter::~ResultsWriter() {
  if (file_) std::fclose(file_);
}

void ResultsWriter::write(const RecordHeader& header, const void* data) {
  std::fwrite(&header, sizeof header, 1, file_);
  if (header.bytes) std::fwrite(data, 1, header.bytes, file_);
}

void ResultsWriter::close() {
  bool failed = std::ferror(file_) != 0;
  failed |= std::fclose(file_) != 0;
  file_ = nullptr;
  if (failed) throw std::runtime_error("writing " + path_ + " failed");
}

ResultsReader::ResultsReader(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "rb");
  if (!file_) throw std::runtime_error("cannot read " + path);
  if (std::fread(&header_, sizeof header_, 1, file_) != 1 ||
      std::memcmp(header_.magic, kMagic, sizeof kMagic) != 0) {
    throw std::runtime_error(path + " is not a validate_nccl results file");
  }
  header_.library[sizeof header_.library - 1] = '\0';
  std::fseek(file_, 0, SEEK_END);
  long size = std::ftell(file_);
  long at = sizeof header_;
  while (at < size) {
    RecordHeader record;
    std::fseek(file_, at, SEEK_SET);
    if (std::fread(&record, sizeof record, 1, file_) != 1)
      throw std::runtime_error(path + ": truncated record header at byte " + std::to_string(at));
    at += sizeof record;
    if (record.bytes > static_cast<std::uint64_t>(size - at))
      throw std::runtime_error(path + ": record '" + describe(record.key) + "' is truncated");
    if (!records_.emplace(record.key, record).second)
      throw std::runtime_error(path + ": record '" + describe(record.key) + "' appears twice");
    offsets_[record.key] = at;
    at += static_cast<long>(record.bytes);
  }
}

ResultsReader::~ResultsReader() {
  if (file_) std::fclose(file_);
}

std::vector<unsigned char> ResultsReader::payload(const CaseKey& key) const {
  const RecordHeader& record = records_.at(key);
  std::vector<unsigned char> data(record.bytes);
  std::fseek(file_, offsets_.at(key), SEEK_SET);
  if (record.bytes && std::fread(data.data(), 1, data.size(), file_) != data.size())
    throw std::runtime_error(path_ + ": cannot read '" + describe(key) + "'");
  return data;
}

std::string ResultsReader::errorText(const CaseKey& key) const {
  std::vector<unsigned char> data = payload(key);
  return std::string(data.begin(), data.end());
}

}  // namespace braid::validate_nccl
