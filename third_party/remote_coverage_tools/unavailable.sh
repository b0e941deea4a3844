#!/bin/sh
echo "remote_coverage_tools is not available offline: bazel coverage is not supported" >&2
exit 1
