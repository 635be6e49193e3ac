// Eigen views of rbd_linearizer's messages: A, B, f as matrices without copying a number.
//
// The Matrix message is dense and row-major (rows, cols, data: element (r, c) is
// data[r * cols + c]); TrajectoryLinearization packs A_k, B_k, f_k of every point k row-major
// into one array each. Both map onto Eigen::Map<const RowMajorMatrix>: a view of the message's
// own std::vector<double>, valid as long as the message lives and is not modified.
//
// Every view checks the sizes first and throws std::invalid_argument on a mismatch, so a
// message whose layout differs from what this code expects is refused, never misread. Read
// A, B, f only through these functions: should a future version of the messages leave out
// structurally fixed blocks, only these functions would change.
//
// Header-only; needs Eigen 3 and the C++ message types (rbd_linearizer/msg/*.hpp).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include <Eigen/Core>

#include "rbd_linearizer/msg/linearization.hpp"
#include "rbd_linearizer/msg/matrix.hpp"
#include "rbd_linearizer/msg/trajectory_linearization.hpp"

namespace rbd_linearizer_eigen
{

/// Dense row-major double matrix: the element order of the messages.
using RowMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
/// Read-only view of a matrix in a message (no copy).
using MatrixView = Eigen::Map<const RowMajorMatrix>;
/// Read-only view of a vector in a message (no copy).
using VectorView = Eigen::Map<const Eigen::VectorXd>;

/// The linearized dynamics at one point: continuous dz/dt = A z + B w, or discrete
/// z[k+1] = A z[k] + B w[k]; drift f. Views into the message they were made from.
struct LinearizationView
{
  MatrixView A;  // nx x nx
  MatrixView B;  // nx x nu
  VectorView f;  // nx
};

namespace detail
{
inline void expect(bool ok, const std::string & what)
{
  if (!ok) {
    throw std::invalid_argument("rbd_linearizer message: " + what);
  }
}
}  // namespace detail

/// View a Matrix message as rows x cols (checks rows * cols == data.size()).
inline MatrixView view(const rbd_linearizer::msg::Matrix & m)
{
  detail::expect(
    static_cast<std::size_t>(m.rows) * m.cols == m.data.size(),
    "Matrix " + std::to_string(m.rows) + " x " + std::to_string(m.cols) + " holds " +
    std::to_string(m.data.size()) + " values");
  return MatrixView(m.data.data(), m.rows, m.cols);
}

/// View A, B, f of a Linearization (checks A is nx x nx, B nx x nu, f nx).
inline LinearizationView view(const rbd_linearizer::msg::Linearization & msg)
{
  const Eigen::Index nx = msg.nx, nu = msg.nu;
  MatrixView A = view(msg.a), B = view(msg.b);
  detail::expect(A.rows() == nx && A.cols() == nx, "Linearization: a is not nx x nx");
  detail::expect(B.rows() == nx && B.cols() == nu, "Linearization: b is not nx x nu");
  detail::expect(msg.f.size() == static_cast<std::size_t>(nx), "Linearization: f is not nx");
  return {A, B, VectorView(msg.f.data(), nx)};
}

/// View A_k, B_k, f_k of point k of a TrajectoryLinearization (checks the packed sizes).
inline LinearizationView view(
  const rbd_linearizer::msg::TrajectoryLinearization & msg, std::size_t k)
{
  const std::size_t n = msg.n_points, nx = msg.nx, nu = msg.nu;
  detail::expect(
    msg.a.size() == n * nx * nx && msg.b.size() == n * nx * nu && msg.f.size() == n * nx,
    "TrajectoryLinearization: a, b, f are not n_points * (nx * nx, nx * nu, nx) long");
  detail::expect(k < n, "TrajectoryLinearization: point " + std::to_string(k) + " of " +
    std::to_string(n));
  const auto rows = static_cast<Eigen::Index>(nx), cols = static_cast<Eigen::Index>(nu);
  return {
    MatrixView(msg.a.data() + k * nx * nx, rows, rows),
    MatrixView(msg.b.data() + k * nx * nu, rows, cols),
    VectorView(msg.f.data() + k * nx, rows)};
}

}  // namespace rbd_linearizer_eigen
