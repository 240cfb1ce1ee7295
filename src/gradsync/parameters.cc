// Parameters: broadcast from one rank so every replica starts equal, and a bitwise check that
// replicas still are. Both first agree on the parameter list (count and dtype of each), so a
// mismatched list is an error on every rank rather than a broadcast of the wrong sizes.
#include <algorithm>
#include <cstring>
#include <sstream>

#include "gradsync/element_ops.h"
#include "gradsync/engine.h"

namespace braid::gradsync {

namespace {

std::string parameterLabel(size_t index, const std::vector<std::string>& names) {
  std::string label = std::to_string(index);
  if (index < names.size() && !names[index].empty()) label += " ('" + names[index] + "')";
  return label;
}

std::string formatValue(double value) {
  std::ostringstream out;
  out.precision(9);
  out << value;
  return out.str();
}

}  // namespace

ncclResult_t Engine::checkParameterLists(const char* what, const std::vector<TensorRef>& params,
                                         const std::vector<std::string>& names, int root) {
  if (failed_) return failed_;
  if (finalized_ && step_.marked > 0)
    return refuse(ncclInvalidUsage,
                  std::string(what) + ": called between markReady() and finish() of a step");
  std::string problem;
  int64_t problemIndex = -1;
  for (size_t i = 0; i < params.size() && problem.empty(); i++) {
    const TensorRef& p = params[i];
    if (elementSize(p.dtype) == 0)
      problem = "dtype " + dtypeName(p.dtype) + " is not an NCCL dtype";
    else if (!p.data && p.count > 0)
      problem = "data is NULL for " + std::to_string(p.count) + " elements";
    if (!problem.empty()) {
      problemIndex = static_cast<int64_t>(i);
      problem = "parameter " + parameterLabel(i, names) + ": " + problem;
    }
  }
  if (problem.empty() && (root < 0 || root >= nranks_)) {
    problemIndex = -2;
    problem =
        "root=" + std::to_string(root) + " is not a rank (0.." + std::to_string(nranks_ - 1) + ")";
  }
  std::vector<std::vector<int64_t>> rows;
  const std::vector<int64_t> header = {problem.empty() ? 0 : 1, problemIndex,
                                       static_cast<int64_t>(params.size()), root};
  if (ncclResult_t r = allgatherWords(header, &rows, what); r != ncclSuccess) return r;
  if (!problem.empty()) return refuse(ncclInvalidArgument, std::string(what) + ": " + problem);
  for (int q = 0; q < nranks_; q++) {
    if (rows[q][0] == 0) continue;
    return refuse(ncclInvalidArgument,
                  std::string(what) + ": rank " + std::to_string(q) + " refused its " +
                      (rows[q][1] == -2 ? "root " + std::to_string(rows[q][3])
                                        : "parameter " + std::to_string(rows[q][1])));
  }
  for (int q = 1; q < nranks_; q++) {
    if (rows[q][2] != rows[0][2])
      return refuse(ncclInvalidUsage, std::string(what) + ": rank 0 passes " +
                                          std::to_string(rows[0][2]) + " parameters, rank " +
                                          std::to_string(q) + " passes " +
                                          std::to_string(rows[q][2]));
    if (rows[q][3] != rows[0][3])
      return refuse(ncclInvalidUsage,
                    std::string(what) + ": rank 0 names root " + std::to_string(rows[0][3]) +
                        ", rank " + std::to_string(q) + " root " + std::to_string(rows[q][3]));
  }
  std::vector<int64_t> shapes;
  for (const TensorRef& p : params) {
    shapes.push_back(static_cast<int64_t>(p.count));
    shapes.push_back(static_cast<int64_t>(p.dtype));
  }
  if (ncclResult_t r = allgatherWords(shapes, &rows, what); r != ncclSuccess) return r;
  for (size_t i = 0; i < params.size(); i++) {
    for (int q = 1; q < nranks_; q++) {
      if (rows[q][2 * i] == rows[0][2 * i] && rows[q][2 * i + 1] == rows[0][2 * i + 1]) continue;
      auto describe = [&](int rank) {
        return std::to_string(rows[rank][2 * i]) + " x " +
               dtypeName(static_cast<ncclDataType_t>(rows[rank][2 * i + 1]));
      };
      return refuse(ncclInvalidUsage, std::string(what) + ": parameter " +
                                          parameterLabel(i, names) +
                                          " differs across ranks: rank 0 has " + describe(0) +
                                          ", rank " + std::to_string(q) + " has " + describe(q));
    }
  }
  return ncclSuccess;
}

ncclResult_t Engine::broadcastParameters(const std::vector<TensorRef>& params, int root) {
  if (ncclResult_t r = checkParameterLists("broadcastParameters", params, {}, root);
      r != ncclSuccess)
    return r;
  ncclGroupStart();
  ncclResult_t r = ncclSuccess;
  for (const TensorRef& p : params) {
    if (p.count == 0) continue;
    r = ncclBroadcast(p.data, p.data, p.count, p.dtype, root, comm_, nullptr);
    if (r != ncclSuccess) break;
  }
  ncclResult_t ended = ncclGroupEnd();
  if (r == ncclSuccess) r = ended;
  if (r != ncclSuccess)
    return failObject(r, std::string("broadcastParameters: ") + ncclGetLastError(comm_));
  return ncclSuccess;
}

// Exact, not a hash: rank 0's copy of each parameter is broadcast and compared byte for byte,
// then every rank's first difference is gathered so the error can name parameter, ranks and
// values. Costs one broadcast of the model: a check, not something for every step of a big run.
ncclResult_t Engine::verifyParametersEqual(const std::vector<TensorRef>& params,
                                           const std::vector<std::string>& names) {
  if (ncclResult_t r = checkParameterLists("verifyParametersEqual", params, names, 0);
      r != ncclSuccess)
    return r;
  size_t largest = 0;
  for (const TensorRef& p : params) largest = std::max(largest, p.count * elementSize(p.dtype));
  AlignedBuffer reference;
  reference.allocate(largest);
  int64_t firstParam = -1, firstElement = -1;
  double mine = 0, theirs = 0;
  for (size_t i = 0; i < params.size(); i++) {
    const TensorRef& p = params[i];
    if (p.count == 0) continue;
    const size_t bytes = p.count * elementSize(p.dtype);
    if (rank_ == 0) std::memcpy(reference.data(), p.data, bytes);
    ncclResult_t r =
        ncclBroadcast(reference.data(), reference.data(), p.count, p.dtype, 0, comm_, nullptr);
    if (r != ncclSuccess)
      return failObject(r, std::string("verifyParametersEqual: ") + ncclGetLastError(comm_));
    if (firstParam >= 0 || std::memcmp(reference.data(), p.data, bytes) == 0) continue;
    const size_t size = elementSize(p.dtype);
    for (size_t e = 0; e < p.count; e++) {
      if (std::memcmp(reference.data() + e * size, static_cast<std::byte*>(p.data) + e * size,
                      size) == 0)
        continue;
      firstParam = static_cast<int64_t>(i);
      firstElement = static_cast<int64_t>(e);
      mine = elementAsDouble(p.data, e, p.dtype);
      theirs = elementAsDouble(reference.data(), e, p.dtype);
      break;
    }
  }
  int64_t mineBits, theirsBits;
  std::memcpy(&mineBits, &mine, sizeof(double));
  std::memcpy(&theirsBits, &theirs, sizeof(double));
  std::vector<std::vector<int64_t>> rows;
  if (ncclResult_t r = allgatherWords({firstParam, firstElement, mineBits, theirsBits}, &rows,
                                      "verifyParametersEqual");
      r != ncclSuccess)
    return r;
  int64_t worst = -1;
  for (int q = 0; q < nranks_; q++)
    if (rows[q][0] >= 0 && (worst < 0 || rows[q][0] < worst)) worst = rows[q][0];
  if (worst < 0) return ncclSuccess;
  std::string ranks, details;
  for (int q = 0; q < nranks_; q++) {
    if (rows[q][0] != worst) continue;
    double value, reference0;
    std::memcpy(&value, &rows[q][2], sizeof(double));
    std::memcpy(&reference0, &rows[q][3], sizeof(double));
    ranks += (ranks.empty() ? "" : ", ") + std::to_string(q);
    details += "; rank " + std::to_string(q) + " element " + std::to_string(rows[q][1]) + " = " +
               formatValue(value) + " where rank 0 has " + formatValue(reference0);
  }
  return refuse(ncclInvalidUsage, "verifyParametersEqual: parameter " +
                                      parameterLabel(static_cast<size_t>(worst), names) +
                                      " differs from rank 0's on rank(s) " + ranks + details);
}

}  // namespace braid::gradsync
