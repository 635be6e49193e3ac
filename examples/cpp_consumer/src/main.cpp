// rbd_cpp_consumer: a C++ consumer of the linearizer node (docs/messages.md, "C++ consumers").
//
// What a C++ MPC does with the node, in three steps:
//   1. subscribe to the node's ~/linearization and view A, B, f of each message as Eigen
//      matrices, without copying (rbd_linearizer_eigen.hpp);
//   2. call ~/linearize_trajectory with its predicted trajectory and view A_k, B_k, f_k of the
//      answer the same way;
//   3. publish the trajectory on ~/trajectory and take the answer from
//      ~/trajectory_linearization (the real-time-iteration loop: the answer carries the
//      trajectory's stamp).
// It talks to ROS 2 through rcl, the C client library underneath rclcpp, with the C++ message
// types and type support that rclcpp uses. With rclcpp the ROS part is shorter (see
// docs/messages.md); the Eigen part is the same.
//
// Usage: rbd_cpp_consumer [--linearizer NODE] [--count N] [--points K] [--dt DT]
//                         [--time-model MODEL] [--timeout SECONDS] [--ros-args ...]
//   NODE     the linearizer's fully qualified node name (default /linearizer): its topics
//            and services are NODE/linearization, NODE/linearize_trajectory, ...
//   N        linearizations to receive (default 3)
//   K, DT    points and step [s] of the trajectory sent (default 5, 0.01)
//   MODEL    time model of the trajectory sent: discrete (default) or continuous
//   SECONDS  give up after this long (default 60)
//
// Output, on stdout: what it sent and received, every number a C99 hex float (printf "%a"),
// which reads back exactly (Python: float.fromhex), so test/ros/test_cpp_consumer.py compares
// it bit for bit with what rclpy receives. A record line, then its data lines:
//   linearization stamp=<ns> nx=<nx> nu=<nu>                       lines A, B, f
//   trajectory stamp=<ns> n_points=<K> velocity_representation=<r> time_model=<t>
//                                  lines joint_names, base_poses (px py pz qx qy qz qw per
//                                  point), base_twists (vx vy vz wx wy wz), joint_positions,
//                                  joint_velocities, inputs, dt: the fields as sent
//   linearize_trajectory stamp=<ns> n_points=<K> nx=<nx> nu=<nu>  lines A, B, f (all points)
//   trajectory_linearization stamp=<ns> n_points=<K> nx=<nx> nu=<nu>  lines A, B, f
// A, B are written element by element through the Eigen views, row by row (point by point):
// in the order of the message's row-major data. A message that left out implied rows (the
// node's omit_implied_rows, continuous time) is read with full() instead: the full matrices. Progress and errors go to stderr. Exit
// status: 0 on success, 1 on an error or a timeout.

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <rcl/error_handling.h>
#include <rcl/graph.h>
#include <rcl/rcl.h>
#include <rmw/types.h>
#include <rosidl_typesupport_cpp/message_type_support.hpp>
#include <rosidl_typesupport_cpp/service_type_support.hpp>

#include "rbd_linearizer/msg/linearization.hpp"
#include "rbd_linearizer/msg/trajectory.hpp"
#include "rbd_linearizer/msg/trajectory_linearization.hpp"
#include "rbd_linearizer/srv/linearize_trajectory.hpp"
#include "rbd_linearizer_eigen.hpp"

namespace
{

using rbd_linearizer::msg::Linearization;
using rbd_linearizer::msg::Trajectory;
using rbd_linearizer::msg::TrajectoryLinearization;
using rbd_linearizer::srv::LinearizeTrajectory;
using rbd_linearizer_eigen::LinearizationView;
using Clock = std::chrono::steady_clock;

// rcl reports an error as a return code plus a thread-local message: make it an exception.
void check(rcl_ret_t ret, const std::string & what)
{
  if (ret != RCL_RET_OK) {
    const std::string message = what + " failed: " + rcl_get_error_string().str;
    rcl_reset_error();
    throw std::runtime_error(message);
  }
}

int64_t stamp_ns(const builtin_interfaces::msg::Time & t)
{
  return static_cast<int64_t>(t.sec) * 1000000000 + t.nanosec;
}

// One rcl node with the consumer's subscriptions, publisher and client, and a wait set over
// them. spin_once() waits for anything to arrive and appends it to the public queues.
class Consumer
{
public:
  // Everything received, in order (this short-lived program keeps it all; a controller would
  // keep the newest message only).
  std::deque<Linearization> linearizations;
  std::deque<TrajectoryLinearization> trajectory_linearizations;
  std::map<int64_t, LinearizeTrajectory::Response> responses;  // by request sequence number

  Consumer(rcl_context_t * context, const std::string & linearizer)
  {
    try {
      init(context, linearizer);
    } catch (...) {
      fini();
      throw;
    }
  }
  ~Consumer() {fini();}
  Consumer(const Consumer &) = delete;
  Consumer & operator=(const Consumer &) = delete;

  // Wait up to `timeout` for messages or responses and take every one that arrived.
  void spin_once(std::chrono::nanoseconds timeout)
  {
    check(rcl_wait_set_clear(&wait_set_), "rcl_wait_set_clear");
    check(rcl_wait_set_add_subscription(&wait_set_, &linearization_sub_, nullptr), "wait set");
    check(rcl_wait_set_add_subscription(&wait_set_, &trajectory_sub_, nullptr), "wait set");
    check(rcl_wait_set_add_client(&wait_set_, &client_, nullptr), "wait set");
    const rcl_ret_t ret = rcl_wait(&wait_set_, timeout.count());
    if (ret == RCL_RET_TIMEOUT) {
      return;
    }
    check(ret, "rcl_wait");
    // rcl_wait leaves non-null only the entries that are ready
    if (wait_set_.subscriptions[0]) {
      take_all(linearization_sub_, linearizations);
    }
    if (wait_set_.subscriptions[1]) {
      take_all(trajectory_sub_, trajectory_linearizations);
    }
    if (wait_set_.clients[0]) {
      while (true) {
        LinearizeTrajectory::Response response;
        rmw_request_id_t header;
        const rcl_ret_t r = rcl_take_response(&client_, &header, &response);
        if (r == RCL_RET_CLIENT_TAKE_FAILED) {
          break;
        }
        check(r, "rcl_take_response");
        responses[header.sequence_number] = std::move(response);
      }
    }
  }

  // Spin until `done()` holds (true) or `deadline` has passed (false).
  bool spin_until(const std::function<bool()> & done, Clock::time_point deadline)
  {
    while (!done()) {
      if (Clock::now() >= deadline) {
        return false;
      }
      spin_once(std::chrono::milliseconds(50));
    }
    return true;
  }

  // Spin until `done()` holds; throw after `deadline`.
  void wait_for(const std::function<bool()> & done, Clock::time_point deadline,
    const std::string & what)
  {
    if (!spin_until(done, deadline)) {
      throw std::runtime_error("timed out waiting for " + what);
    }
  }

  // Call ~/linearize_trajectory and return its response.
  LinearizeTrajectory::Response call(const LinearizeTrajectory::Request & request,
    Clock::time_point deadline)
  {
    wait_for([this] {
        bool available = false;
        check(rcl_service_server_is_available(&node_, &client_, &available), "server check");
        return available;
      }, deadline, "the service " + service_name());
    while (true) {
      int64_t sequence = 0;
      check(rcl_send_request(&client_, &request, &sequence), "rcl_send_request");
      // Fast DDS can drop the response to a client's very first request when the server has
      // not matched the client's response reader yet (a loaded machine): ask again after a
      // while (the service is idempotent; a late answer to the first request is ignored).
      const auto retry = std::min(deadline, Clock::now() + std::chrono::seconds(5));
      if (spin_until([&] {return responses.count(sequence) > 0;}, retry)) {
        LinearizeTrajectory::Response response = std::move(responses[sequence]);
        responses.erase(sequence);
        return response;
      }
      if (Clock::now() >= deadline) {
        throw std::runtime_error("timed out waiting for the response of " + service_name());
      }
      std::fprintf(stderr, "rbd_cpp_consumer: no response yet, asking again\n");
    }
  }

  // Publish on ~/trajectory once the node's subscription and publisher are matched (a
  // reliable, volatile publisher drops what it sends before that).
  void publish(const Trajectory & trajectory, Clock::time_point deadline)
  {
    wait_for([this] {
        std::size_t readers = 0, writers = 0;
        check(rcl_publisher_get_subscription_count(&trajectory_pub_, &readers), "matching");
        check(rcl_subscription_get_publisher_count(&trajectory_sub_, &writers), "matching");
        return readers > 0 && writers > 0;
      }, deadline, "the node's ~/trajectory subscription");
    check(rcl_publish(&trajectory_pub_, &trajectory, nullptr), "rcl_publish");
  }

private:
  rcl_node_t node_ = rcl_get_zero_initialized_node();
  rcl_subscription_t linearization_sub_ = rcl_get_zero_initialized_subscription();
  rcl_subscription_t trajectory_sub_ = rcl_get_zero_initialized_subscription();
  rcl_publisher_t trajectory_pub_ = rcl_get_zero_initialized_publisher();
  rcl_client_t client_ = rcl_get_zero_initialized_client();
  rcl_wait_set_t wait_set_ = rcl_get_zero_initialized_wait_set();

  void init(rcl_context_t * context, const std::string & linearizer)
  {
    rcl_node_options_t node_options = rcl_node_get_default_options();
    check(rcl_node_init(&node_, "rbd_cpp_consumer", "", context, &node_options),
      "rcl_node_init");
    // The type support handles of the C++ message types: what rclcpp passes to rcl.
    const rosidl_message_type_support_t * linearization_ts =
      rosidl_typesupport_cpp::get_message_type_support_handle<Linearization>();
    const rosidl_message_type_support_t * trajectory_linearization_ts =
      rosidl_typesupport_cpp::get_message_type_support_handle<TrajectoryLinearization>();
    const rosidl_message_type_support_t * trajectory_ts =
      rosidl_typesupport_cpp::get_message_type_support_handle<Trajectory>();
    const rosidl_service_type_support_t * service_ts =
      rosidl_typesupport_cpp::get_service_type_support_handle<LinearizeTrajectory>();
    // rcl's default QoS (reliable, volatile, keep last 10) is the node's for its results
    // (rbd_linearizer.ros.qos.result_qos) and is compatible with its ~/trajectory subscription.
    rcl_subscription_options_t sub_options = rcl_subscription_get_default_options();
    check(rcl_subscription_init(&linearization_sub_, &node_, linearization_ts,
      (linearizer + "/linearization").c_str(), &sub_options), "subscribe ~/linearization");
    check(rcl_subscription_init(&trajectory_sub_, &node_, trajectory_linearization_ts,
      (linearizer + "/trajectory_linearization").c_str(), &sub_options),
      "subscribe ~/trajectory_linearization");
    rcl_publisher_options_t pub_options = rcl_publisher_get_default_options();
    check(rcl_publisher_init(&trajectory_pub_, &node_, trajectory_ts,
      (linearizer + "/trajectory").c_str(), &pub_options), "advertise ~/trajectory");
    rcl_client_options_t client_options = rcl_client_get_default_options();
    check(rcl_client_init(&client_, &node_, service_ts,
      (linearizer + "/linearize_trajectory").c_str(), &client_options),
      "client ~/linearize_trajectory");
    // 2 subscriptions, 0 guard conditions, 0 timers, 1 client, 0 services, 0 events
    check(rcl_wait_set_init(&wait_set_, 2, 0, 0, 1, 0, 0, context,
      rcl_get_default_allocator()), "rcl_wait_set_init");
  }

  void fini()
  {
    // Each fini is a no-op on a zero-initialized (never initialized) handle.
    auto report = [](rcl_ret_t ret) {
        if (ret != RCL_RET_OK) {
          std::fprintf(stderr, "rbd_cpp_consumer: clean-up: %s\n", rcl_get_error_string().str);
          rcl_reset_error();
        }
      };
    report(rcl_wait_set_fini(&wait_set_));
    report(rcl_client_fini(&client_, &node_));
    report(rcl_publisher_fini(&trajectory_pub_, &node_));
    report(rcl_subscription_fini(&trajectory_sub_, &node_));
    report(rcl_subscription_fini(&linearization_sub_, &node_));
    report(rcl_node_fini(&node_));
  }

  std::string service_name() const
  {
    const char * name = rcl_client_get_service_name(&client_);
    return name ? name : "~/linearize_trajectory";
  }

  // rcl_take deserializes into the C++ message type of the subscription's type support.
  template<class Message>
  static void take_all(const rcl_subscription_t & subscription, std::deque<Message> & out)
  {
    while (true) {
      Message message;
      rmw_message_info_t info = rmw_get_zero_initialized_message_info();
      const rcl_ret_t ret = rcl_take(&subscription, &message, &info, nullptr);
      if (ret == RCL_RET_SUBSCRIPTION_TAKE_FAILED) {
        return;  // nothing more
      }
      check(ret, "rcl_take");
      out.push_back(std::move(message));
    }
  }
};

// A stand-in for an MPC's predicted trajectory: `points` states from the linearization point
// x0 of `lin`, the joints moving at their velocity for `dt` per point, the base and the input
// u0 held. A real MPC sends its own prediction (and inputs) here.
Trajectory predicted_trajectory(
  const Linearization & lin, std::size_t points, double dt, const std::string & time_model)
{
  Trajectory trajectory;
  trajectory.header = lin.header;  // the MPC iteration's stamp: the answers carry it back
  trajectory.joint_names = lin.joint_names;
  trajectory.n_points = static_cast<uint32_t>(points);
  // base twists in the representation of lin's state; a discrete model has one step
  trajectory.velocity_representation = lin.velocity_representation;
  trajectory.time_model = time_model;
  if (time_model == Linearization::TIME_DISCRETE) {
    trajectory.dt = {dt};
  }
  const auto & x0 = lin.state;
  for (std::size_t k = 0; k < points; ++k) {
    if (lin.floating_base) {
      trajectory.base_poses.push_back(x0.base_pose);
      trajectory.base_twists.push_back(x0.base_twist);
    }
    for (std::size_t j = 0; j < x0.joint_positions.size(); ++j) {
      const double t = static_cast<double>(k) * dt;
      trajectory.joint_positions.push_back(x0.joint_positions[j] + t * x0.joint_velocities[j]);
      trajectory.joint_velocities.push_back(x0.joint_velocities[j]);
    }
    trajectory.inputs.insert(trajectory.inputs.end(), lin.input.begin(), lin.input.end());
  }
  return trajectory;
}

// --- Output: hex floats, exact ------------------------------------------------------------

void write_values(const char * label, const std::vector<double> & values)
{
  std::printf("%s", label);
  for (double x : values) {
    std::printf(" %a", x);
  }
  std::printf("\n");
}

// A matrix element by element through its Eigen view (or full copy), row by row.
template<class Matrix>
void write_matrix(const Matrix & m, std::vector<double> & out)
{
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    for (Eigen::Index c = 0; c < m.cols(); ++c) {
      out.push_back(m(r, c));
    }
  }
}

// Points as views (LinearizationView) or full copies (rbd_linearizer_eigen::Linearization).
template<class Point>
void write_views(const std::vector<Point> & points)
{
  std::vector<double> a, b, f;
  for (const auto & p : points) {
    write_matrix(p.A, a);
    write_matrix(p.B, b);
    f.insert(f.end(), p.f.data(), p.f.data() + p.f.size());
  }
  write_values("A", a);
  write_values("B", b);
  write_values("f", f);
}

void write_linearization(const Linearization & msg)
{
  std::printf("linearization stamp=%" PRId64 " nx=%u nu=%u\n", stamp_ns(msg.header.stamp),
    msg.nx, msg.nu);
  if (msg.implied_rows.empty()) {
    write_views(std::vector<LinearizationView>{rbd_linearizer_eigen::view(msg)});  // no copy
  } else {  // implied rows left out: the full matrices, restored (a copy)
    write_views(std::vector<rbd_linearizer_eigen::Linearization>{
      rbd_linearizer_eigen::full(msg)});
  }
}

void write_trajectory_linearization(const char * kind, const TrajectoryLinearization & msg)
{
  std::printf("%s stamp=%" PRId64 " n_points=%u nx=%u nu=%u\n", kind,
    stamp_ns(msg.header.stamp), msg.n_points, msg.nx, msg.nu);
  if (msg.implied_rows.empty()) {
    std::vector<LinearizationView> points;
    for (std::size_t k = 0; k < msg.n_points; ++k) {
      points.push_back(rbd_linearizer_eigen::view(msg, k));  // A_k, B_k, f_k: no copy
    }
    write_views(points);
  } else {
    std::vector<rbd_linearizer_eigen::Linearization> points;
    for (std::size_t k = 0; k < msg.n_points; ++k) {
      points.push_back(rbd_linearizer_eigen::full(msg, k));  // implied rows restored
    }
    write_views(points);
  }
}

void write_trajectory(const Trajectory & t)
{
  std::printf("trajectory stamp=%" PRId64 " n_points=%u velocity_representation=%s "
    "time_model=%s\n", stamp_ns(t.header.stamp), t.n_points,
    t.velocity_representation.c_str(), t.time_model.c_str());
  std::printf("joint_names");
  for (const auto & name : t.joint_names) {
    std::printf(" %s", name.c_str());
  }
  std::printf("\n");
  std::vector<double> poses, twists;
  for (const auto & p : t.base_poses) {
    poses.insert(poses.end(), {p.position.x, p.position.y, p.position.z, p.orientation.x,
        p.orientation.y, p.orientation.z, p.orientation.w});
  }
  for (const auto & v : t.base_twists) {
    twists.insert(twists.end(), {v.linear.x, v.linear.y, v.linear.z, v.angular.x,
        v.angular.y, v.angular.z});
  }
  write_values("base_poses", poses);
  write_values("base_twists", twists);
  write_values("joint_positions", t.joint_positions);
  write_values("joint_velocities", t.joint_velocities);
  write_values("inputs", t.inputs);
  write_values("dt", t.dt);
}

// --- Command line --------------------------------------------------------------------------

struct Options
{
  std::string linearizer = "/linearizer";
  std::size_t count = 3;
  std::size_t points = 5;
  double dt = 0.01;
  std::string time_model = "discrete";
  double timeout_s = 60.0;
};

Options parse_options(int argc, char ** argv)
{
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--ros-args") {
      break;  // the rest is rcl's (rcl_init parses it)
    }
    if (i + 1 >= argc) {
      throw std::invalid_argument("unknown option or missing value: " + arg);
    }
    const std::string value = argv[++i];
    if (arg == "--linearizer") {
      o.linearizer = value;
    } else if (arg == "--count") {
      o.count = std::stoul(value);
    } else if (arg == "--points") {
      o.points = std::stoul(value);
    } else if (arg == "--dt") {
      o.dt = std::stod(value);
    } else if (arg == "--time-model") {
      o.time_model = value;
    } else if (arg == "--timeout") {
      o.timeout_s = std::stod(value);
    } else {
      throw std::invalid_argument("unknown option: " + arg);
    }
  }
  if (o.time_model != "discrete" && o.time_model != "continuous") {
    throw std::invalid_argument("--time-model is discrete or continuous");
  }
  if (o.count < 1 || o.points < 1) {
    throw std::invalid_argument("--count and --points must be at least 1");
  }
  return o;
}

int run(const Options & options, rcl_context_t * context)
{
  const auto deadline = Clock::now() +
    std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.timeout_s));
  Consumer consumer(context, options.linearizer);

  // 1. ~/linearization: view A, B, f of each message (a controller would use them here).
  consumer.wait_for([&] {return consumer.linearizations.size() >= options.count;}, deadline,
    std::to_string(options.count) + " messages on " + options.linearizer + "/linearization");
  for (std::size_t i = 0; i < options.count; ++i) {
    write_linearization(consumer.linearizations[i]);
  }
  const Linearization & last = consumer.linearizations[options.count - 1];
  const auto lin = rbd_linearizer_eigen::full(last);  // any message: the full matrices
  std::fprintf(stderr, "rbd_cpp_consumer: linearization: nx = %ld, nu = %ld, |A| = %g, "
    "|B| = %g, |f| = %g\n", static_cast<long>(lin.A.rows()), static_cast<long>(lin.B.cols()),
    lin.A.norm(), lin.B.norm(), lin.f.norm());

  // 2. ~/linearize_trajectory with a trajectory starting at the last state received.
  LinearizeTrajectory::Request request;
  request.trajectory = predicted_trajectory(last, options.points, options.dt,
    options.time_model);
  write_trajectory(request.trajectory);
  const LinearizeTrajectory::Response response = consumer.call(request, deadline);
  if (!response.success) {
    throw std::runtime_error("~/linearize_trajectory refused the trajectory: " +
      response.message);
  }
  write_trajectory_linearization("linearize_trajectory", response.linearization);

  // 3. The same trajectory on ~/trajectory; the answer on ~/trajectory_linearization carries
  //    its stamp. The publisher is volatile: should the very first message be lost while the
  //    node's reader is matching, publish it again.
  const int64_t stamp = stamp_ns(request.trajectory.header.stamp);
  auto answered = [&] {
      for (const auto & m : consumer.trajectory_linearizations) {
        if (stamp_ns(m.header.stamp) == stamp) {
          return true;
        }
      }
      return false;
    };
  while (true) {
    consumer.publish(request.trajectory, deadline);
    if (consumer.spin_until(answered, std::min(deadline, Clock::now() + std::chrono::seconds(5)))) {
      break;
    }
    if (Clock::now() >= deadline) {
      throw std::runtime_error("timed out waiting for the trajectory's answer on " +
        options.linearizer + "/trajectory_linearization");
    }
    std::fprintf(stderr, "rbd_cpp_consumer: no answer yet, publishing again\n");
  }
  for (const auto & m : consumer.trajectory_linearizations) {
    if (stamp_ns(m.header.stamp) == stamp) {
      write_trajectory_linearization("trajectory_linearization", m);
      break;
    }
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char ** argv)
{
  Options options;
  try {
    options = parse_options(argc, argv);
  } catch (const std::exception & e) {
    std::fprintf(stderr, "rbd_cpp_consumer: %s\n", e.what());
    return 2;
  }
  rcl_allocator_t allocator = rcl_get_default_allocator();
  rcl_init_options_t init_options = rcl_get_zero_initialized_init_options();
  rcl_context_t context = rcl_get_zero_initialized_context();
  int status = 1;
  try {
    check(rcl_init_options_init(&init_options, allocator), "rcl_init_options_init");
    // rcl_init reads ROS_DOMAIN_ID, ROS_AUTOMATIC_DISCOVERY_RANGE, ... and --ros-args.
    check(rcl_init(argc, argv, &init_options, &context), "rcl_init");
    status = run(options, &context);
  } catch (const std::exception & e) {
    std::fprintf(stderr, "rbd_cpp_consumer: %s\n", e.what());
    status = 1;
  }
  // Clean-up errors change nothing for the caller: clear them.
  if (rcl_context_is_valid(&context) && rcl_shutdown(&context) != RCL_RET_OK) {
    rcl_reset_error();
  }
  if (rcl_context_fini(&context) != RCL_RET_OK) {
    rcl_reset_error();
  }
  if (rcl_init_options_fini(&init_options) != RCL_RET_OK) {
    rcl_reset_error();
  }
  return status;
}
