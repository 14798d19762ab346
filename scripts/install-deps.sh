#!/usr/bin/env bash
# Installs the Debian 12 packages Hearth builds and tests with. Idempotent: does nothing when
# every package is already installed. Run as root (or with sudo).
set -euo pipefail

packages=(
  g++ cmake ninja-build pkgconf git
  catch2 libcli11-dev nlohmann-json3-dev libtomlplusplus-dev libspdlog-dev
  libcaf-dev libdnnl-dev ocl-icd-opencl-dev libtbb-dev libtbbbind-2-5 libhwloc-dev
  libzmq3-dev cppzmq-dev libcpp-httplib-dev python3-zmq libsystemd-dev
  clang libclang-rt-14-dev libomp-dev
  dpkg-dev systemd  # cpack -G DEB's dependency list (dpkg-shlibdeps); systemd-analyze for the unit's test
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
