// all_reduce of a sparse COO tensor (SUM, as ProcessGroupGloo offers it): every rank's nonzeros
// are gathered (padded to the largest count, since mixccl's AllGather takes one size) and summed
// by coalescing. Every rank concatenates the same entries in rank order, so every rank gets the
// same sum, bit for bit.
#include "collectives.h"

#include <c10/util/Exception.h>

namespace mixccl_torch {

void runSparseAllreduce(Comm& comm, const at::Tensor& tensor) {
  const int64_t n = comm.size();
  at::Tensor mine = tensor.coalesce();
  const int64_t nnz = mine._nnz();
  const int64_t sparseDim = mine.sparse_dim();
  at::Tensor counts = at::empty({n}, at::kLong);
  runAllgather(comm, counts, at::full({1}, nnz, at::kLong));
  const int64_t maxNnz = counts.max().item<int64_t>();
  if (maxNnz == 0) return;  // nonzeros nowhere: the sum is the (empty) tensor itself

  at::Tensor indices = at::zeros({sparseDim, maxNnz}, at::kLong);
  indices.narrow(1, 0, nnz).copy_(mine._indices());
  std::vector<int64_t> valueShape = mine._values().sizes().vec();
  valueShape[0] = maxNnz;
  at::Tensor values = at::zeros(valueShape, mine._values().options());
  values.narrow(0, 0, nnz).copy_(mine._values());

  at::Tensor allIndices = at::empty({n, sparseDim, maxNnz}, at::kLong);
  runAllgather(comm, allIndices, indices);
  valueShape.insert(valueShape.begin(), n);
  at::Tensor allValues = at::empty(valueShape, values.options());
  runAllgather(comm, allValues, values);

  std::vector<at::Tensor> is, vs;
  for (int64_t r = 0; r < n; ++r) {
    int64_t k = counts[r].item<int64_t>();
    TORCH_CHECK(k >= 0 && k <= maxNnz, "mixccl allreduce (sparse): rank ", r, " reported ", k,
                " nonzeros");
    is.push_back(allIndices[r].narrow(1, 0, k));
    vs.push_back(allValues[r].narrow(0, 0, k));
  }
  at::Tensor sum = at::sparse_coo_tensor(at::cat(is, 1), at::cat(vs, 0), tensor.sizes(),
                                         tensor.options())
                       .coalesce();
  tensor.copy_(sum);
}

}  // namespace mixccl_torch
