#include "algorithms/registry.h"

namespace braid {

const char* collName(CollType c) {
  switch (c) {
    case CollType::kAllReduce:
      return "AllReduce";
  }
  return "?";
}

// Default preference order per collective; the selector may reorder by size and rank count.
const std::vector<const Algorithm*>& algorithmsFor(CollType coll) {
  static const std::vector<const Algorithm*> allReduce = {
      selfCollective(),
      ringAllReduce(),
      treeAllReduce(),
  };
  static const std::vector<const Algorithm*> none;
  return coll == CollType::kAllReduce ? allReduce : none;
}

}  // namespace braid
