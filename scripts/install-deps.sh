#!/usr/bin/env bash
# Installs the Debian 12 packages Hearth builds and tests with. Idempotent: does nothing when
# every package is already installed. Run as root (or with sudo).
set -euo pipefail

packages=(
  g++ cmake ninja-build pkgconf git
  catch2 libcli11-dev nlohmann-json3-dev libtomlplusplus-dev
  libcaf-dev libdnnl-dev ocl-icd-opencl-dev libhwloc-dev libtbb-dev libtbbbind-2-5
  libzmq3-dev cppzmq-dev libcpp-httplib-dev python3-zmq python3-venv python3-pip libsystemd-dev
  python3-prometheus-client  # parses /metrics in its test
  clang clang-format libclang-rt-14-dev libomp-dev lld nodejs
  iproute2  # ip netns: the workers' network-namespace test
  dpkg-dev systemd  # cpack -G DEB's dependency list (dpkg-shlibdeps); systemd-analyze for the unit's test
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm: Debian's own package beside Debian's nodejs; NodeSource's nodejs brings npm itself and
# conflicts with Debian's npm, so it is asked for only when no npm is there.
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The HTTP tests' client packages, exactly as tests/http/package-lock.json pins them. `npm ci`
# reinstalls from the lockfile; --prefer-offline takes npm's cache first, so a machine that
# installed them once needs no network. Skipped when they are installed from this lockfile (a
# copy of it is kept as the stamp).
http_tests="$(dirname "$0")/../tests/http"
if ! cmp -s "$http_tests/package-lock.json" "$http_tests/node_modules/.hearth-lock.json"; then
  echo "install-deps: npm ci in tests/http (ollama, openai clients)"
  (cd "$http_tests" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error &&
    cp package-lock.json node_modules/.hearth-lock.json)
fi
