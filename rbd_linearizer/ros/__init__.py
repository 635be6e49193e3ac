"""ROS 2 glue: the only subpackage that imports rclpy or the generated messages."""
