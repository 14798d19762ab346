#!/usr/bin/env bash
# `cmake --install` and `cpack -G DEB` on this build: what lands where, the unit's paths follow
# the prefix given at install time, systemd accepts the unit, and the package declares its
# dependencies, conffile and maintainer scripts. Usage: test_install.sh HEARTH
source "$(dirname "$0")/lib.sh"
hearth=$1
build=$(dirname "$hearth")

DESTDIR="$dir/root" cmake --install "$build" --prefix /usr >/dev/null
for f in usr/bin/hearth usr/lib/systemd/system/hearth.service etc/hearth/hearth.toml \
         usr/lib/python3/dist-packages/hearth_client/__init__.py usr/share/doc/hearth/README.md \
         usr/share/doc/hearth/operations.md usr/share/doc/hearth/python-client.md; do
  [ -f "$dir/root/$f" ] || fail "cmake --install: no $f"
done
"$dir/root/usr/bin/hearth" --help >/dev/null || fail "the installed hearth does not run"
unit="$dir/root/usr/lib/systemd/system/hearth.service"
grep -qx 'ExecStart=/usr/bin/hearth serve --config /etc/hearth/hearth.toml' "$unit" || fail "unit: $(grep ExecStart "$unit")"
grep -qx 'CacheDirectory=hearth' "$unit" || fail "unit: no CacheDirectory (the kernel tuner's plans)"

# Another prefix: the unit and the configuration follow it.
DESTDIR="$dir/opt" cmake --install "$build" --prefix /opt/hearth >/dev/null
grep -qx 'ExecStart=/opt/hearth/bin/hearth serve --config /opt/hearth/etc/hearth/hearth.toml' \
  "$dir/opt/opt/hearth/lib/systemd/system/hearth.service" || fail "prefix /opt/hearth: unit paths"
[ -f "$dir/opt/opt/hearth/etc/hearth/hearth.toml" ] || fail "prefix /opt/hearth: no etc/hearth/hearth.toml"

# systemd's own check, with ExecStart pointed at a binary that exists here (it checks that too).
if command -v systemd-analyze >/dev/null; then
  sed "s#^ExecStart=/usr/bin/hearth#ExecStart=$dir/root/usr/bin/hearth#" "$unit" >"$dir/hearth.service"
  systemd-analyze verify "$dir/hearth.service" || fail "systemd-analyze verify"
  systemd-analyze security --offline=true --threshold=40 "$unit" >/dev/null || fail "systemd-analyze security: exposure above 4.0"
fi

if command -v cpack >/dev/null && command -v dpkg-deb >/dev/null; then
  (cd "$build" && cpack -G DEB -B "$dir/pkg" >/dev/null) || fail "cpack -G DEB"
  deb=$(ls "$dir"/pkg/hearth_*_amd64.deb)
  contents=$(dpkg-deb -c "$deb")
  for f in ./usr/bin/hearth ./usr/lib/systemd/system/hearth.service ./etc/hearth/hearth.toml \
           ./usr/lib/python3/dist-packages/hearth_client/client.py ./usr/share/doc/hearth/README.md; do
    grep -q " $f\$" <<<"$contents" || fail "package lacks $f"
  done
  depends=$(dpkg-deb -f "$deb" Depends)
  # OpenMP's runtime is libgomp1 for GCC builds, libomp5 for Clang's (the sanitizer build).
  for d in adduser libdnnl libzmq5 libcaf-core libhwloc libsystemd0 'libgomp1\|libomp5'; do
    grep -q "$d" <<<"$depends" || fail "Depends lacks $d: $depends"
  done
  dpkg-deb -e "$deb" "$dir/control"
  grep -qx /etc/hearth/hearth.toml "$dir/control/conffiles" || fail "conffiles: $(cat "$dir/control/conffiles")"
  grep -q 'adduser --system' "$dir/control/postinst" || fail "postinst makes no system user"
  # The postinst as dpkg runs it at configure, on a machine without the user, every command it
  # calls stubbed to log its arguments (nothing is installed here): the user first, then the
  # model folder, owned by that user.
  mkdir "$dir/stubs"
  for c in getent adduser mkdir chown systemctl; do
    printf '#!/bin/sh\necho "%s $*" >>"%s"\n[ %s != getent ]\n' "$c" "$dir/postinst.log" "$c" >"$dir/stubs/$c"
    chmod +x "$dir/stubs/$c"
  done
  PATH="$dir/stubs" /bin/sh "$dir/control/postinst" configure || fail "postinst configure: exit $?"
  at() { grep -n -m1 -- "$1" "$dir/postinst.log" | cut -d: -f1 || true; }
  user=$(at '^adduser --system .*hearth$') models=$(at '^mkdir -p /var/lib/hearth/models$')
  owner=$(at '^chown hearth:hearth .*/var/lib/hearth/models')
  [ -n "$user" ] && [ -n "$models" ] && [ -n "$owner" ] && [ "$user" -lt "$owner" ] && [ "$models" -lt "$owner" ] ||
    fail "postinst does not make the user, then /var/lib/hearth/models owned by it: $(cat "$dir/postinst.log")"
  grep -q 'systemctl enable\|systemctl start' "$dir/control/postinst" && fail "postinst enables or starts the service"
fi
echo "install: all checks passed"
