#!/usr/bin/env bash
# Runs the README's commands in a clean Debian root, so that a missing install step shows up here
# and not on a user's new machine: this machine (and CI's) has packages and tweaks a fresh one lacks.
#
#   launch/fresh-root-check.sh [--suite NAME] [--tests] [--keep] [-- ARGS FOR phalanx train]
#
# Builds a minimal root with `debootstrap --variant=minbase` (the host's Debian release, or the one
# --suite names, e.g. trixie; the mirror and the root's apt sources are the host's Debian entries,
# with the suite renamed for another release: bookworm-security becomes trixie-security), binds
# /proc, /dev and /sys, and the CUDA toolkit read-only as the host has it (the toolkit folder and
# its symlinks, headers, runtime and wrapper scripts under /usr/local), clones the committed checkout into it (untracked files cannot help), and runs:
#   default   launch/quickstart.sh with its training cut short (ARGS, default
#             --set train.epochs=1), then checks the exit status and the printed test accuracy
#             (at least $PHALANX_FRESH_MIN_ACCURACY, default 0.80);
#   --tests   launch/run-tests.sh (the README's test command) instead.
# Everything is unmounted on any exit; the root is deleted only when nothing is mounted in it any
# more (a bound /dev deleted recursively would be the host's /dev). --keep leaves the root.
# PHALANX_FRESH_ROOT chooses the root's folder (default: a new one under ${TMPDIR:-/var/tmp}).
set -euo pipefail

mode=main
keep=0
suite=""
train_arguments=()
while [ $# -gt 0 ]; do
  case "$1" in
    --tests) mode=tests ;;
    --keep) keep=1 ;;
    --suite)
      [ $# -ge 2 ] && [ -n "$2" ] || { echo "fresh-root-check: --suite needs a Debian release name" >&2; exit 2; }
      suite=$2; shift ;;
    --) shift; train_arguments=("$@"); break ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fresh-root-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ ${#train_arguments[@]} -gt 0 ] || train_arguments=(--set train.epochs=1)
minimum_accuracy=${PHALANX_FRESH_MIN_ACCURACY:-0.80}

if [ "$(id -u)" -ne 0 ]; then
  echo "fresh-root-check: needs root (debootstrap, mount, chroot)" >&2; exit 2
fi
repository=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
. /etc/os-release
codename=${VERSION_CODENAME:?fresh-root-check: /etc/os-release names no release}
if [ "${ID:-}" != debian ]; then
  echo "fresh-root-check: the host is ${ID:-unknown}, not Debian: no Debian mirror to read" >&2; exit 2
fi
suite=${suite:-$codename}
# debootstrap on this machine first (its scripts name the releases it knows); checks started
# together install it one after the other, under a lock.
if ! command -v debootstrap >/dev/null; then
  flock /var/lock/phalanx-fresh-root-debootstrap.lock bash -c 'command -v debootstrap >/dev/null ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null; }'
fi
if [ ! -e "/usr/share/debootstrap/scripts/$suite" ]; then
  echo "fresh-root-check: debootstrap on this machine does not know the release '$suite'" >&2; exit 2
fi

# The host's Debian sources: one-line (sources.list) and deb822 (*.sources) entries whose suite is
# this release or one of its -updates/-security/-backports; other vendors' entries stay out.
debian_sources() {
  local file
  for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$file" ] || continue
    awk -v release="$codename" '$1 == "deb" {
        field = 2; if ($2 ~ /^\[/) { while ($field !~ /\]$/) field++; field++ }
        uri = $field; suite = $(field + 1); components = ""
        for (i = field + 2; i <= NF; i++) components = components " " $i
        if (suite ~ "^" release "(-updates|-security|-backports)?$") print uri, suite, components
      }' "$file"
  done
  for file in /etc/apt/sources.list.d/*.sources; do
    [ -f "$file" ] || continue
    awk -v release="$codename" '
      function flush(   count, suites, i) {
        if (types ~ /(^| )deb( |$)/ && uris != "") {
          count = split(suite_list, suites, " ")
          for (i = 1; i <= count; i++)
            if (suites[i] ~ "^" release "(-updates|-security|-backports)?$") print uris, suites[i], " " components
        }
        types = ""; uris = ""; suite_list = ""; components = ""
      }
      /^[ \t]*$/ { flush(); next }
      /^Types:/ { sub(/^Types:[ \t]*/, ""); types = $0 }
      /^URIs:/ { sub(/^URIs:[ \t]*/, ""); uris = $1 }
      /^Suites:/ { sub(/^Suites:[ \t]*/, ""); suite_list = $0 }
      /^Components:/ { sub(/^Components:[ \t]*/, ""); components = $0 }
      END { flush() }' "$file"
  done
}
mapfile -t host_source_lines < <(debian_sources)
mirror=""
source_lines=()
for line in "${host_source_lines[@]}"; do
  read -r uri source_suite components <<<"$line"
  if [ "$source_suite" = "$codename" ] && [ -z "$mirror" ]; then mirror=$uri; fi
  # The same archive for the root's release: bookworm-updates names trixie-updates in a trixie root.
  source_lines+=("$uri $suite${source_suite#"$codename"} $components")
done
if [ -z "$mirror" ]; then
  echo "fresh-root-check: no apt source for '$codename' in /etc/apt/sources.list(.d)" >&2; exit 2
fi

root=${PHALANX_FRESH_ROOT:-$(mktemp -d "${TMPDIR:-/var/tmp}/phalanx-fresh-root.XXXXXX")}
mkdir -p "$root"
root=$(cd "$root" && pwd -P)
# It becomes /: mktemp's 0700 would shut out every user but root (apt's _apt, daemons, tests).
chmod 0755 "$root"
if [ -n "$(ls -A "$root")" ]; then
  echo "fresh-root-check: $root is not empty; give PHALANX_FRESH_ROOT a new or empty folder" >&2; exit 2
fi

# Every mount point at or under the root, deepest first (mountinfo escapes spaces as \040).
mounts_under_root() {
  awk -v root="$root" '{ gsub(/\\040/, " ", $5); if ($5 == root || index($5, root "/") == 1) print $5 }' \
    /proc/self/mountinfo | awk '{ print length($0) "\t" $0 }' | sort -rn | cut -f2-
}
cleanup() {
  local status=$? process mount_point
  trap - EXIT INT TERM
  # Daemons a package started inside the root would keep its mounts busy.
  for process in /proc/[0-9]*; do
    if [ "$(readlink "$process/root" 2>/dev/null)" = "$root" ]; then kill -9 "${process#/proc/}" 2>/dev/null || true; fi
  done
  while read -r mount_point; do
    [ -n "$mount_point" ] || continue
    umount "$mount_point" 2>/dev/null || umount -l "$mount_point" 2>/dev/null ||
      echo "fresh-root-check: could not unmount $mount_point" >&2
  done < <(mounts_under_root)
  if [ -n "$(mounts_under_root)" ]; then
    echo "fresh-root-check: $root still has mounts; left in place, not deleted:" >&2
    mounts_under_root >&2
    [ "$status" -ne 0 ] || status=1
  elif [ "$keep" = 1 ]; then
    echo "fresh-root-check: root kept at $root"
  else
    rm -rf --one-file-system "$root"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

timed() {  # timed LABEL COMMAND...: runs it, prints how long it took, returns its status
  local label=$1 start=$SECONDS status=0
  shift
  "$@" || status=$?   # (errexit does not apply here: callers run this on the left of ||)
  echo "fresh-root-check: $label took $((SECONDS - start)) s"
  return "$status"
}

echo "fresh-root-check: debootstrap --variant=minbase $suite from $mirror into $root"
start=$SECONDS
debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$root.debootstrap.log" 2>&1 ||
  { tail -n 30 "$root.debootstrap.log" >&2; exit 1; }
rm -f "$root.debootstrap.log"
echo "fresh-root-check: debootstrap took $((SECONDS - start)) s"

# The host's Debian sources (for the root's release), so the root installs what the host would.
: >"$root/etc/apt/sources.list"
for line in "${source_lines[@]}"; do echo "deb $line" >>"$root/etc/apt/sources.list"; done
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
# An installed Debian machine has an /etc/hosts (its installer writes one); a minbase bookworm root
# has none, and there Open MPI 4.1 looks "localhost" up in DNS: every mpiexec waited 5 s for it.
if [ ! -e "$root/etc/hosts" ]; then
  printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
fi
# The CA certificates the host trusts beyond Debian's set (a site whose proxy re-signs TLS puts its
# own there): pip fetches oneDNN 3 from PyPI over HTTPS (launch/install-dependencies.sh), and
# Debian's pip checks against the system bundle that update-ca-certificates builds from this folder.
if [ -d /usr/local/share/ca-certificates ]; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp -rL /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
fi
# Packages may not start their daemons (munge, slurm) inside the root: they would outlive the check.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod +x "$root/usr/sbin/policy-rc.d"

# The root is a mount point of its own, as / is on a machine: tools that change mount propagation
# of / (ip netns) need one. A slave of the host's mounts: nothing done inside reaches the host.
mount --bind "$root" "$root"
mount --make-rslave "$root"
for system_folder in proc sys dev; do
  mount --rbind "/$system_folder" "$root/$system_folder"
  mount --make-rslave "$root/$system_folder"   # unmounting in the root never reaches the host
done

# The CUDA toolkit as the host has it: its folder read-only, and the symlinks into it and the
# small wrapper scripts that /usr/local holds (CMake's FindCUDAToolkit follows those).
if [ -e /usr/local/cuda ]; then
  toolkit=$(readlink -f /usr/local/cuda)
  mkdir -p "$root$toolkit"
  mount --bind "$toolkit" "$root$toolkit"
  mount -o remount,bind,ro "$root$toolkit"
  for folder in /usr/local /usr/local/include /usr/local/lib /usr/local/bin; do
    [ -d "$folder" ] || continue
    mkdir -p "$root$folder"
    for entry in "$folder"/* "$folder"/.[!.]*; do
      [ -e "$entry" ] || [ -L "$entry" ] || continue
      [ "$entry" != "$toolkit" ] || continue
      if [ -L "$entry" ]; then
        case "$(readlink -f "$entry")" in
          "$toolkit"|"$toolkit"/*) [ -e "$root$entry" ] || ln -s "$(readlink "$entry")" "$root$entry" ;;
        esac
      elif [ -f "$entry" ] && [ "$(stat -c %s "$entry")" -lt 4096 ] && grep -qs "$toolkit" "$entry"; then
        cp -p "$entry" "$root$entry"
      fi
    done
  done
  echo "fresh-root-check: CUDA toolkit $toolkit bound read-only"
else
  echo "fresh-root-check: no CUDA toolkit on this machine; the root builds without it"
fi

commit=$(git -C "$repository" rev-parse --short HEAD)
git clone --quiet "$repository" "$root/root/phalanx"
if [ -n "$(git -C "$repository" status --porcelain --untracked-files=no)" ]; then
  echo "fresh-root-check: note: uncommitted changes in $repository are not in the root (it has $commit)"
fi

# A clean environment: nothing of this shell (PATH to the toolkit, compiler flags) reaches the root.
in_root() {
  chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}
# apt builds the bundle with these certificates when it installs ca-certificates; a root that has
# the package already builds it now.
if [ -x "$root/usr/sbin/update-ca-certificates" ]; then in_root update-ca-certificates >/dev/null; fi
log="$root/root/fresh-root-check.log"
if [ "$mode" = tests ]; then
  echo "fresh-root-check: launch/run-tests.sh in the root (commit $commit)"
  status=0
  timed "launch/run-tests.sh" in_root bash -c 'cd /root/phalanx && launch/run-tests.sh' 2>&1 | tee "$log" ||
    status=$?
  [ "$status" -eq 0 ] || { echo "fresh-root-check: FAILED: launch/run-tests.sh exited $status" >&2; exit 1; }
  echo "fresh-root-check: PASSED: launch/run-tests.sh in a fresh $suite root"
  exit 0
fi

echo "fresh-root-check: launch/quickstart.sh ${train_arguments[*]} in the root (commit $commit)"
status=0
timed "launch/quickstart.sh" in_root bash -c 'cd /root/phalanx && launch/quickstart.sh "$@"' quickstart \
  "${train_arguments[@]}" 2>&1 | tee "$log" || status=$?
if [ "$status" -ne 0 ]; then
  echo "fresh-root-check: FAILED: launch/quickstart.sh exited $status" >&2; exit 1
fi
accuracy=$(grep -oE 'test accuracy [0-9.]+' "$log" | tail -n 1 | awk '{ print $3 }')
if [ -z "$accuracy" ]; then
  echo "fresh-root-check: FAILED: launch/quickstart.sh printed no test accuracy" >&2; exit 1
fi
if ! awk -v value="$accuracy" -v minimum="$minimum_accuracy" 'BEGIN { exit !(value >= minimum) }'; then
  echo "fresh-root-check: FAILED: test accuracy $accuracy is under $minimum_accuracy" >&2; exit 1
fi
echo "fresh-root-check: PASSED: the main job in a fresh $suite root, test accuracy $accuracy"
