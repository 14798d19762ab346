#!/usr/bin/env bash
# Run here (where apt works), before a GPU check: unpacks the two header-only Debian packages the
# CUDA backend's build needs (Catch2 v2, nlohmann-json) into .gpu-deps/, which the device tool
# carries to a GPU machine that has CUDA, CMake and ninja but no package registry.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .gpu-deps && mkdir -p .gpu-deps/debs && chmod 777 .gpu-deps/debs  # apt downloads as _apt
(cd .gpu-deps/debs && apt-get download catch2 nlohmann-json3-dev >/dev/null)
for deb in .gpu-deps/debs/*.deb; do dpkg-deb -x "$deb" .gpu-deps; done
rm -rf .gpu-deps/debs .gpu-deps/usr/share/doc
du -sh .gpu-deps
