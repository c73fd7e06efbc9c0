#!/usr/bin/env bash
# Fetches, from Debian 12 (bookworm)'s packages, what a headless GPU host (a container with CUDA
# but no X server, no GLFW, no ImGui and no network) needs to BUILD and RUN the explorer GUI, into
# the ignored folder .gui-runtime/ (added to .git/info/exclude; nothing in it is tracked). Run it
# on any x86-64 machine with apt (Debian or Ubuntu: it uses a private apt state pointing at
# deb.debian.org, so the machine's own sources do not matter), then send the folder along with
# the tree (the device call's `carry`) and run `scripts/gpu_host.sh LOG_DIR --stages build,gui`
# there, or source scripts/gui_runtime_env.sh.
#
#   scripts/fetch_gui_runtime.sh [--dir DIR] [--mirror URL] [--list] [-h|--help]
#
#   --dir DIR     where to put it (default: .gui-runtime in the repository root; a DIR inside the
#                 repository other than that is up to you to ignore)
#   --mirror URL  Debian mirror (default http://deb.debian.org/debian)
#   --list        print the resolved package set and sizes, download nothing
#
# What it fetches (DIR/MANIFEST.txt lists every package, version and size, and the total):
#   gl/      the GL client libraries of the device tool's recipe (libglvnd0 libgl1 libglx0
#            libopengl0 libegl1 libgles2 libvulkan1): gui_runtime_env.sh unpacks them into /
#            (where the NVIDIA driver's libGLX_nvidia finds them) when / has none, and into the
#            private prefix.
#   prefix/  everything else, unpacked into a private prefix (default /opt/flashscope-gui), never
#            into /: Xvfb and xvfb-run (+ xauth), xkbcomp and the xkb data, Mesa's DRI driver
#            (swrast_dri.so: Xvfb's GLX extension needs it, and it links libLLVM-15) and Mesa's
#            GLX vendor library (the llvmpipe fallback), GLFW 3.3 (runtime + dev), Dear ImGui 1.86
#            (libimgui-dev: static library + headers + imgui.pc), stb, the GL/GLX/X11 headers and
#            link symlinks CMake's FindOpenGL wants, and pkgconf. The set is apt's own resolution
#            of those packages (no recommends) against an image assumed to hold only what an
#            Ubuntu 24.04 CUDA image certainly has (libc6, libstdc++6, zlib1g, libzstd1,
#            libexpat1, libsystemd0, ...: BASE_PACKAGES below).
#   stubs/   libz3.so.4 and libicuuc.so.72, generated here (needs cc and readelf): libLLVM-15
#            links Z3 (7 MB, used only by clang's static analyzer) and libxml2 links ICU 72
#            (9 MB, used only for exotic encodings); neither is reached by Mesa, but both must
#            load. The stubs define every symbol those libraries take from them (each aborts with
#            its name if ever called) and keep the carried total under 45 MiB. Left out with them:
#            xserver-common (only protocol.txt, whose absence costs a warning) and its x11-common.
#
# Why Mesa's DRI driver is carried at all (28 MiB with LLVM): Xvfb registers its GLX extension
# only when a GL provider initialises a screen, and its only provider loads swrast_dri.so
# (LIBGL_DRIVERS_PATH is honoured); without it every GLX client, NVIDIA's libGLX_nvidia
# included, gets "GLX extension not found". The server-side driver only describes the visuals
# and fbconfigs; the client (NVIDIA's GLX with __GLX_VENDOR_LIBRARY_NAME=nvidia) renders on the
# GPU. Needs glibc >= 2.36 on the host (Ubuntu 24.04 has 2.39); MANIFEST.txt says the highest
# GLIBC_ symbol version any carried binary needs.
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
die() { echo "fetch_gui_runtime.sh: $*" >&2; exit 1; }

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR="$ROOT/.gui-runtime"
MIRROR="http://deb.debian.org/debian"
LIST_ONLY=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dir) [[ $# -ge 2 ]] || die "--dir needs a folder"; DIR="$2"; shift 2 ;;
    --mirror) [[ $# -ge 2 ]] || die "--mirror needs a URL"; MIRROR="$2"; shift 2 ;;
    --list) LIST_ONLY=1; shift ;;
    -h|--help) usage 0 ;;
    *) echo "fetch_gui_runtime.sh: unknown option $1" >&2; usage ;;
  esac
done

# What the explorer GUI needs, by package (apt resolves their dependencies).
WANTED=(xvfb xauth x11-xkb-utils xkb-data libgl1-mesa-dri libglx-mesa0 libglfw3 libglfw3-dev
        libimgui-dev libstb-dev libgl-dev libglx-dev libopengl-dev pkgconf)
# The device tool's GL client libraries: unpacked into / on the host.
GL_PACKAGES=(libglvnd0 libgl1 libglx0 libopengl0 libegl1 libgles2 libvulkan1)
# Assumed present on the host (an Ubuntu 24.04 CUDA image): never fetched.
BASE_PACKAGES=(libc6 libgcc-s1 libstdc++6 gcc-12-base zlib1g libzstd1 liblzma5 libbz2-1.0
               libselinux1 libpcre2-8-0 libaudit1 libaudit-common libcap-ng0 libcap2 libsystemd0
               libgcrypt20 libgpg-error0 liblz4-1 libmd0 libudev1 libacl1 libattr1 libcrypt1
               libtinfo6 libncursesw6 libffi8 libgmp10 libuuid1 libblkid1 libmount1 libcom-err2
               libdb5.3 libpam0g libseccomp2 libsemanage2 libsepol2 debconf perl-base dpkg
               coreutils libexpat1)
# Resolved but not carried: stubbed (stubs/) or not needed to run Xvfb.
SKIPPED=(libz3-4 libicu72 xserver-common x11-common sysvinit-utils lsb-base)

for tool in apt-get apt-cache dpkg-deb; do
  command -v "$tool" > /dev/null || die "needs $tool: run it on a Debian or Ubuntu machine with apt"
done
if [[ $LIST_ONLY == 0 ]]; then
  for tool in cc readelf; do
    command -v "$tool" > /dev/null || die "needs $tool to make the stub libraries (apt-get install gcc binutils)"
  done
fi
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
[[ -r $KEYRING ]] || die "no $KEYRING: install debian-archive-keyring (on Ubuntu too: apt-get install debian-archive-keyring)"
[[ $(uname -m) == x86_64 ]] || echo "fetch_gui_runtime.sh: note: this machine is $(uname -m); the packages fetched are amd64 (the GPU host's)" >&2

# A private apt state: Debian bookworm's lists, and a dpkg status that holds BASE_PACKAGES only.
APT_TMP=$(mktemp -d)
trap 'rm -rf "$APT_TMP"' EXIT
mkdir -p "$APT_TMP"/{lists/partial,cache/archives/partial,parts,prefs,state}
cat > "$APT_TMP/sources.list" <<EOF
deb [signed-by=$KEYRING] $MIRROR bookworm main
deb [signed-by=$KEYRING] $MIRROR bookworm-updates main
deb [signed-by=$KEYRING] ${MIRROR%/debian}/debian-security bookworm-security main
EOF
: > "$APT_TMP/state/status"
APT_OPTS=(-o "Dir::Etc::SourceList=$APT_TMP/sources.list" -o "Dir::Etc::SourceParts=$APT_TMP/parts"
          -o "Dir::Etc::Parts=$APT_TMP/parts" -o "Dir::Etc::Preferences=$APT_TMP/prefs/none"
          -o "Dir::Etc::PreferencesParts=$APT_TMP/prefs" -o "Dir::State::Lists=$APT_TMP/lists"
          -o "Dir::State::status=$APT_TMP/state/status" -o "Dir::Cache=$APT_TMP/cache"
          -o APT::Architecture=amd64 -o APT::Architectures=amd64 -o Debug::NoLocking=1
          -o APT::Sandbox::User=root -q)
echo "fetch_gui_runtime.sh: apt-get update (Debian bookworm, $MIRROR)"
apt-get "${APT_OPTS[@]}" update > "$APT_TMP/update.log" 2>&1 || { cat "$APT_TMP/update.log" >&2; die "apt-get update failed (network? mirror?)"; }
for package in "${BASE_PACKAGES[@]}"; do
  version=$(apt-cache "${APT_OPTS[@]}" policy "$package" | awk '/Candidate:/ {print $2}')
  [[ -n $version && $version != "(none)" ]] || die "base package $package not found in bookworm"
  printf 'Package: %s\nStatus: install ok installed\nPriority: required\nArchitecture: amd64\nVersion: %s\n\n' \
    "$package" "$version" >> "$APT_TMP/state/status"
done

# apt's resolver: what installing WANTED would add to that image (no recommends).
mapfile -t RESOLVED < <(apt-get "${APT_OPTS[@]}" install -s --no-install-recommends "${WANTED[@]}" \
  2> "$APT_TMP/resolve.log" | awk '/^Inst / {print $2}')
[[ ${#RESOLVED[@]} -gt 0 ]] || { cat "$APT_TMP/resolve.log" >&2; die "apt could not resolve ${WANTED[*]}"; }
is_in() { local item=$1; shift; local x; for x in "$@"; do [[ $x == "$item" ]] && return 0; done; return 1; }
PREFIX_PACKAGES=()
for package in "${RESOLVED[@]}"; do
  is_in "$package" "${GL_PACKAGES[@]}" "${SKIPPED[@]}" || PREFIX_PACKAGES+=("$package")
done
size_of() { apt-cache "${APT_OPTS[@]}" show --no-all-versions "$1" | awk '/^Size:/ {print $2; exit}'; }
version_of() { apt-cache "${APT_OPTS[@]}" policy "$1" | awk '/Candidate:/ {print $2}'; }

if [[ $LIST_ONLY == 1 ]]; then
  total=0
  for package in "${GL_PACKAGES[@]}" "${PREFIX_PACKAGES[@]}"; do
    size=$(size_of "$package"); total=$((total + size))
    printf '%10d  %s %s\n' "$size" "$package" "$(version_of "$package")"
  done
  echo "total of the .debs: $((total / 1048576)) MiB ($total bytes; the stubs add about 0.1 MiB)"
  exit 0
fi

# Keep the folder out of git, idempotently (a DIR outside the repository needs nothing).
case "$DIR" in
  "$ROOT"/*)
    if git -C "$ROOT" rev-parse --git-dir > /dev/null 2>&1; then
      EXCLUDE="$(git -C "$ROOT" rev-parse --git-path info/exclude)"
      [[ $EXCLUDE == /* ]] || EXCLUDE="$ROOT/$EXCLUDE"
      mkdir -p "$(dirname "$EXCLUDE")"
      ENTRY="/${DIR#"$ROOT"/}/"
      grep -qxF "$ENTRY" "$EXCLUDE" 2> /dev/null || echo "$ENTRY" >> "$EXCLUDE"
      if [[ -n $(git -C "$ROOT" ls-files -- "$DIR") ]]; then
        die "$DIR holds tracked files; choose another --dir"
      fi
    fi ;;
esac

rm -rf "$DIR.tmp"
mkdir -p "$DIR.tmp/gl" "$DIR.tmp/prefix" "$DIR.tmp/stubs"
echo "fetch_gui_runtime.sh: downloading ${#GL_PACKAGES[@]} GL client packages and ${#PREFIX_PACKAGES[@]} prefix packages"
(cd "$DIR.tmp/gl" && apt-get "${APT_OPTS[@]}" download "${GL_PACKAGES[@]}" > /dev/null) \
  || die "apt-get download of the GL client packages failed"
(cd "$DIR.tmp/prefix" && apt-get "${APT_OPTS[@]}" download "${PREFIX_PACKAGES[@]}" > /dev/null) \
  || die "apt-get download of the prefix packages failed"

# The stubs: every symbol libLLVM-15 takes from libz3.so.4 and libxml2 takes from libicuuc.so.72.
UNPACK="$APT_TMP/unpack"
mkdir -p "$UNPACK"
for deb in "$DIR.tmp"/prefix/libllvm15_*.deb "$DIR.tmp"/prefix/libxml2_*.deb; do
  [[ -f $deb ]] || die "expected $(basename "${deb%%_*}") among the resolved packages"
  dpkg-deb -x "$deb" "$UNPACK"
done
make_stub() {  # make_stub SONAME CONSUMER SYMBOL-REGEX
  local soname=$1 consumer=$2 pattern=$3 source="$APT_TMP/${1%%.so*}_stub.c" symbols
  symbols=$(readelf --dyn-syms -W "$consumer" | awk -v re="$pattern" '$7 == "UND" && $8 ~ re {sub(/@.*/, "", $8); print $8}' | sort -u)
  [[ -n $symbols ]] || die "no symbol of $soname found in $consumer"
  {
    echo "/* Generated by scripts/fetch_gui_runtime.sh: $soname, for $(basename "$consumer") to load. */"
    echo '#include <stdio.h>'
    echo '#include <stdlib.h>'
    # shellcheck disable=SC2028  # the \\n is C's
    echo "static void stub_called(const char *name) { fprintf(stderr, \"flashscope GUI runtime: %s (stubbed $soname) was called\\n\", name); abort(); }"
    while read -r symbol; do echo "void $symbol(void) { stub_called(\"$symbol\"); }"; done <<< "$symbols"
  } > "$source"
  cc -shared -fPIC -O1 -w -Wl,-soname,"$soname" -o "$DIR.tmp/stubs/$soname" "$source" \
    || die "cc could not build the $soname stub"
  echo "$soname: $(wc -l <<< "$symbols") symbols" >> "$APT_TMP/stubs.txt"
}
make_stub libz3.so.4 "$UNPACK/usr/lib/x86_64-linux-gnu/libLLVM-15.so.1" '^Z3_'
make_stub libicuuc.so.72 "$(readlink -f "$UNPACK"/usr/lib/x86_64-linux-gnu/libxml2.so.2)" '_72$'

# The newest glibc symbol version any carried binary needs (the host's glibc must be at least it).
dpkg_all=("$DIR.tmp"/gl/*.deb "$DIR.tmp"/prefix/*.deb)
for deb in "${dpkg_all[@]}"; do dpkg-deb -x "$deb" "$UNPACK"; done
GLIBC_NEEDED=$(find "$UNPACK" -type f \( -name '*.so*' -o -path '*/bin/*' \) -exec readelf -V -W {} + 2> /dev/null \
  | grep -oE 'GLIBC_2\.[0-9]+' | sort -t. -k2,2n -u | tail -1 || true)

{
  echo "# flashscope GUI runtime: Debian bookworm packages fetched $(date -u +%Y-%m-%dT%H:%M:%SZ) by scripts/fetch_gui_runtime.sh"
  echo "# highest glibc symbol version needed: ${GLIBC_NEEDED:-unknown}"
  for folder in gl prefix; do
    for deb in "$DIR.tmp/$folder"/*.deb; do
      printf '%s\t%s\t%s\t%s\n' "$folder" "$(dpkg-deb -f "$deb" Package)" "$(dpkg-deb -f "$deb" Version)" "$(stat -c %s "$deb")"
    done
  done
  sed 's/^/stubs\t/' "$APT_TMP/stubs.txt"
} > "$DIR.tmp/MANIFEST.txt"
rm -rf "$DIR"
mv "$DIR.tmp" "$DIR"
TOTAL=$(du -sb "$DIR" | cut -f1)
GL_COUNT=$(find "$DIR/gl" -name '*.deb' | wc -l)
PREFIX_COUNT=$(find "$DIR/prefix" -name '*.deb' | wc -l)
echo "fetch_gui_runtime.sh: $GL_COUNT GL client + $PREFIX_COUNT prefix packages + 2 stubs in $DIR"
echo "fetch_gui_runtime.sh: highest glibc symbol version needed: ${GLIBC_NEEDED:-unknown} (the host needs at least that)"
echo "fetch_gui_runtime.sh: total $(awk -v b="$TOTAL" 'BEGIN {printf "%.1f MiB (%d bytes)", b / 1048576, b}'); carry it as \"${DIR#"$ROOT"/}\""
