// nn.Linear's backward (kernels/linear.hpp): the reference twin against the float64 definition
// and against finite differences of the forward, and the fast kernel against the reference on
// shapes that hit every tile edge.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "random_vector.hpp"
#include "mha/kernels/linear.hpp"

namespace {

using mha::kernels::LinearArgs;
using mha::kernels::LinearBackwardArgs;

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double tolerance, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tolerance * (1 + std::abs(want[i]))) << what << "[" << i << "]";
}

// loss = sum(y * g) with y = x W^T + b: its gradients are the backward of d_y = g.
double loss(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& b,
            const std::vector<float>& g, int64_t rows, int64_t in, int64_t out) {
  std::vector<float> y(static_cast<size_t>(rows * out));
  mha::kernels::linear_reference(LinearArgs{x.data(), w.data(), b.data(), y.data(), rows, in, out});
  double sum = 0;
  for (size_t i = 0; i < y.size(); ++i) sum += static_cast<double>(y[i]) * g[i];
  return sum;
}

TEST(LinearBackward, ReferenceMatchesFiniteDifferences) {
  const int64_t rows = 5, in = 4, out = 3;
  auto x = random_vector(rows * in, 11), w = random_vector(out * in, 12), b = random_vector(out, 13);
  const auto g = random_vector(rows * out, 14);
  std::vector<float> dx(rows * in), dw(out * in), db(out);
  mha::kernels::linear_backward_reference(
      LinearBackwardArgs{g.data(), x.data(), w.data(), dx.data(), dw.data(), db.data(), rows, in, out});
  const float h = 1e-2f;  // the loss is linear in each parameter: central differences are exact up to rounding
  const auto numeric = [&](std::vector<float>& p, size_t i) {
    const float keep = p[i];
    p[i] = keep + h;
    const double up = loss(x, w, b, g, rows, in, out);
    p[i] = keep - h;
    const double down = loss(x, w, b, g, rows, in, out);
    p[i] = keep;
    return static_cast<float>((up - down) / (2 * h));
  };
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(dx[i], numeric(x, i), 1e-3) << "d_x[" << i << "]";
  for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(dw[i], numeric(w, i), 1e-3) << "d_weight[" << i << "]";
  for (size_t i = 0; i < b.size(); ++i) EXPECT_NEAR(db[i], numeric(b, i), 1e-3) << "d_bias[" << i << "]";
}

TEST(LinearBackward, FastMatchesReferenceOnEveryTileEdge) {
  for (int64_t rows : {1, 3, 4, 7, 9, 130, 1008}) {
    for (int64_t in : {1, 5, 64}) {
      for (int64_t out : {1, 7, 16, 33, 56}) {
        const auto x = random_vector(rows * in, 1), w = random_vector(out * in, 2), dy = random_vector(rows * out, 3);
        std::vector<float> dx(rows * in, NAN), dw(out * in, NAN), db(out, NAN);
        std::vector<float> rdx(rows * in), rdw(out * in), rdb(out);
        mha::kernels::linear_backward_reference(
            LinearBackwardArgs{dy.data(), x.data(), w.data(), rdx.data(), rdw.data(), rdb.data(), rows, in, out});
        // The outputs start as NaN: each must be written whole, not added to.
        mha::kernels::linear_backward(
            LinearBackwardArgs{dy.data(), x.data(), w.data(), dx.data(), dw.data(), db.data(), rows, in, out});
        expect_close(dx, rdx, 1e-5, "d_x");
        expect_close(dw, rdw, 1e-5 * (1 + rows / 64), "d_weight");
        expect_close(db, rdb, 1e-5 * (1 + rows / 64), "d_bias");
      }
    }
  }
}

TEST(LinearBackward, NullOutputsAreSkippedAndZeroRowsGiveZeros) {
  const auto w = random_vector(6, 1);
  std::vector<float> dw(6, NAN), db(3, NAN);
  mha::kernels::linear_backward(LinearBackwardArgs{nullptr, nullptr, w.data(), nullptr, dw.data(), db.data(), 0, 2, 3});
  EXPECT_EQ(dw, std::vector<float>(6, 0.0f));
  EXPECT_EQ(db, std::vector<float>(3, 0.0f));
  const auto x = random_vector(8, 2), dy = random_vector(12, 3);
  std::vector<float> dx(8, NAN);
  mha::kernels::linear_backward(LinearBackwardArgs{dy.data(), x.data(), w.data(), dx.data(), nullptr, nullptr, 4, 2, 3});
  std::vector<float> want(8);
  mha::kernels::linear_backward_reference(LinearBackwardArgs{dy.data(), x.data(), w.data(), want.data(), nullptr, nullptr, 4, 2, 3});
  expect_close(dx, want, 1e-6, "d_x");
}

}  // namespace
