// Eigen views of rbd_linearizer's messages: A, B, f as matrices without copying a number.
//
// The Matrix message is dense and row-major (rows, cols, data: element (r, c) is
// data[r * cols + c]); TrajectoryLinearization packs A_k, B_k, f_k of every point k row-major
// into one array each. Both map onto Eigen::Map<const RowMajorMatrix>: a view of the message's
// own std::vector<double>, valid as long as the message lives and is not modified.
//
// Every view checks the sizes first and throws std::invalid_argument on a mismatch, so a
// message whose layout differs from what this code expects is refused, never misread.
//
// Implied rows (docs/messages.md): a node with omit_implied_rows leaves out the rows of A, B
// that the structure implies (implied_rows "kinematics" in continuous time, "lie_euler" in
// discrete time). full() reads any message into full matrices (a copy, the rows restored):
//
//   const auto lin = rbd_linearizer_eigen::full(msg);     // lin.A nx x nx, lin.B nx x nu
//   const auto p = rbd_linearizer_eigen::full(traj, k);   // point k of a trajectory answer
//
// view() maps a message with every row in place without copying, and refuses one that left
// rows out.
//
// Header-only; needs Eigen 3 and the C++ message types (rbd_linearizer/msg/*.hpp).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

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

/// The linearized dynamics at one point as full matrices of their own (full()).
struct Linearization
{
  RowMajorMatrix A;  // nx x nx
  RowMajorMatrix B;  // nx x nu
  Eigen::VectorXd f;  // nx
};

namespace detail
{
inline void expect(bool ok, const std::string & what)
{
  if (!ok) {
    throw std::invalid_argument("rbd_linearizer message: " + what);
  }
}

/// Rows of A and B a message carries for implied_rows: {rows of A, rows of B}.
inline std::pair<Eigen::Index, Eigen::Index> sent_rows(
  const std::string & implied, Eigen::Index nx, Eigen::Index n_joints, bool floating_base)
{
  if (implied.empty()) {
    return {nx, nx};
  }
  expect(implied == "kinematics" || implied == "lie_euler",
    "unknown implied_rows '" + implied + "'");
  const Eigen::Index nv = (floating_base ? 6 : 0) + n_joints;
  expect(nx == 2 * nv, "nx = " + std::to_string(nx) + " does not fit " +
    std::to_string(n_joints) + " joints");
  return {nx - n_joints, implied == "kinematics" ? nx - nv : nx - n_joints};
}

/// Full A, B from the rows a message carried (a: rows_a x nx, b: rows_b x nu, row-major):
/// "kinematics" leaves out A's joint kinematic rows (d z_s/dt = z_sdot: zero but an identity
/// on the z_sdot columns) and B's rows of z_H and z_s (zero); "lie_euler" the joints' rows
/// of A and B, which are dt times their velocity rows (plus the identity on A's z_s columns),
/// rebuilt here with the same floating-point operations as the node's kernel (the same bits,
/// unless the compiler fuses the multiply and the add, e.g. GCC with -march=native: then
/// within one rounding).
inline Linearization restore(
  const double * a, const double * b, const double * f, const std::string & implied,
  Eigen::Index nx, Eigen::Index nu, Eigen::Index n_joints, bool floating_base, double dt)
{
  const auto rows = sent_rows(implied, nx, n_joints, floating_base);
  const MatrixView sa(a, rows.first, nx), sb(b, rows.second, nu);
  Linearization out{RowMajorMatrix::Zero(nx, nx), RowMajorMatrix::Zero(nx, nu),
    VectorView(f, nx)};
  if (implied.empty()) {
    out.A = sa;
    out.B = sb;
    return out;
  }
  const Eigen::Index base = floating_base ? 6 : 0, nv = base + n_joints;
  out.A.topRows(base) = sa.topRows(base);
  out.A.bottomRows(nx - nv) = sa.bottomRows(nx - nv);
  if (implied == "kinematics") {
    for (Eigen::Index i = 0; i < n_joints; ++i) {
      out.A(base + i, nv + base + i) = 1.0;
    }
    out.B.bottomRows(rows.second) = sb;
    return out;
  }
  out.B.topRows(base) = sb.topRows(base);  // lie_euler: B's rows as A's
  out.B.bottomRows(nx - nv) = sb.bottomRows(nx - nv);
  for (Eigen::Index i = 0; i < n_joints; ++i) {  // s+ = s + dt sdot+
    for (Eigen::Index c = 0; c < nx; ++c) {
      out.A(base + i, c) = dt * out.A(nv + base + i, c);
    }
    out.A(base + i, base + i) += 1.0;
    for (Eigen::Index c = 0; c < nu; ++c) {
      out.B(base + i, c) = dt * out.B(nv + base + i, c);
    }
  }
  return out;
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

/// View A, B, f of a Linearization (checks A is nx x nx, B nx x nu, f nx; refuses a message
/// with implied rows left out: read those with full()).
inline LinearizationView view(const rbd_linearizer::msg::Linearization & msg)
{
  detail::expect(msg.implied_rows.empty(), "Linearization: implied rows left out ('" +
    msg.implied_rows + "'): read it with rbd_linearizer_eigen::full()");
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
  detail::expect(msg.implied_rows.empty(), "TrajectoryLinearization: implied rows left out ('" +
    msg.implied_rows + "'): read it with rbd_linearizer_eigen::full()");
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

/// A, B, f of a Linearization as full matrices (a copy): also from a message that left out
/// implied rows. Checks the sizes against nx, nu and implied_rows.
inline Linearization full(const rbd_linearizer::msg::Linearization & msg)
{
  const Eigen::Index nx = msg.nx, nu = msg.nu;
  const auto rows = detail::sent_rows(
    msg.implied_rows, nx, static_cast<Eigen::Index>(msg.joint_names.size()), msg.floating_base);
  const MatrixView a = view(msg.a), b = view(msg.b);
  detail::expect(a.rows() == rows.first && a.cols() == nx && b.rows() == rows.second &&
    b.cols() == nu, "Linearization: a, b do not fit nx, nu and implied_rows");
  detail::expect(msg.f.size() == static_cast<std::size_t>(nx), "Linearization: f is not nx");
  return detail::restore(msg.a.data.data(), msg.b.data.data(), msg.f.data(), msg.implied_rows,
    nx, nu, static_cast<Eigen::Index>(msg.joint_names.size()), msg.floating_base, msg.dt);
}

/// A_k, B_k, f_k of point k of a TrajectoryLinearization as full matrices (a copy): also from
/// a message that left out implied rows. Checks the packed sizes.
inline Linearization full(const rbd_linearizer::msg::TrajectoryLinearization & msg, std::size_t k)
{
  const std::size_t n = msg.n_points, nx = msg.nx, nu = msg.nu;
  const auto rows = detail::sent_rows(
    msg.implied_rows, static_cast<Eigen::Index>(nx),
    static_cast<Eigen::Index>(msg.joint_names.size()), msg.floating_base);
  const auto ra = static_cast<std::size_t>(rows.first), rb = static_cast<std::size_t>(rows.second);
  detail::expect(
    msg.a.size() == n * ra * nx && msg.b.size() == n * rb * nu && msg.f.size() == n * nx,
    "TrajectoryLinearization: a, b, f do not fit n_points, nx, nu and implied_rows");
  detail::expect(k < n, "TrajectoryLinearization: point " + std::to_string(k) + " of " +
    std::to_string(n));
  detail::expect(msg.implied_rows != "lie_euler" || msg.dt.size() == n,
    "TrajectoryLinearization: implied_rows 'lie_euler' needs a dt per point");
  return detail::restore(msg.a.data() + k * ra * nx, msg.b.data() + k * rb * nu,
    msg.f.data() + k * nx, msg.implied_rows, static_cast<Eigen::Index>(nx),
    static_cast<Eigen::Index>(nu), static_cast<Eigen::Index>(msg.joint_names.size()),
    msg.floating_base, msg.dt.empty() ? 0.0 : msg.dt[k]);
}

}  // namespace rbd_linearizer_eigen
