# shellcheck shell=bash
# Sourced, not run: sets up the explorer GUI's runtime on a headless GPU host from the .debs that
# scripts/fetch_gui_runtime.sh put in .gui-runtime/ (carried along with the tree), then starts a
# virtual X server.
#
#   . scripts/gui_runtime_env.sh [--no-xvfb]      (bash; returns non-zero, with the reason, on failure)
#
# 1. Unpacks .gui-runtime/prefix/*.deb and gl/*.deb into a private prefix, FLASHSCOPE_GUI_PREFIX
#    (default /opt/flashscope-gui, or /tmp/flashscope-gui where /opt is not writable), with
#    `dpkg-deb -x`; again only when the carried set changed. Only the GL client libraries
#    (gl/*.deb: libglvnd's libGL, libGLX, libOpenGL, libEGL, libGLES, libGLdispatch, Vulkan's
#    loader) also go into /, and only where / has no libGLX.so.0 (FLASHSCOPE_GUI_GL_TO_ROOT=0
#    never, 1 always), as the device tool's recipe does, then ldconfig.
# 2. Moves aside (to PREFIX/shadowed) every carried shared library whose soname the host's ld.so
#    cache already has, so that LD_LIBRARY_PATH adds only what the host lacks and never puts a
#    Debian 12 copy in front of a newer one (FLASHSCOPE_GUI_PRUNE=0 keeps them all: a machine
#    that has them, simulating a bare host). Dangling .so symlinks are pointed at the host's
#    copy; the .pc files' prefix=/usr becomes PREFIX/usr.
# 3. Exports PATH (PREFIX/bin with wrappers, PREFIX/usr/bin), LD_LIBRARY_PATH (appended),
#    CMAKE_PREFIX_PATH and PKG_CONFIG_PATH (so CMake finds GLFW, ImGui, stb and OpenGL there),
#    LIBGL_DRIVERS_PATH (Mesa's swrast_dri.so, which Xvfb's GLX extension loads), and
#    __GLX_VENDOR_LIBRARY_NAME: FLASHSCOPE_GLX_VENDOR if set, else nvidia where the driver's
#    libGLX_nvidia.so.0 is found (its folder is added to LD_LIBRARY_PATH when ld.so does not
#    know it), else mesa (llvmpipe, on the CPU). PREFIX/bin/Xvfb runs the carried Xvfb with
#    -xkbdir PREFIX/usr/share/X11/xkb, so xvfb-run (the GUI tests' launcher) gets it too. Xvfb
#    runs its keymap compiler at a path fixed when it was built, /usr/bin/xkbcomp: where that
#    is missing, a two-line wrapper calling the carried one is written there (the one file this
#    puts into / besides the GL client libraries; FLASHSCOPE_GUI_XKBCOMP_TO_ROOT=0 prevents it).
# 4. Unless --no-xvfb: starts Xvfb on the first free display from :90 with a 1920x1200x24 screen
#    (log: FLASHSCOPE_GUI_LOG_DIR or /tmp, xvfb-N.log) and exports DISPLAY and
#    FLASHSCOPE_XVFB_PID; `flashscope_gui_stop` ends it (`flashscope_gui_start_xvfb` starts
#    another after --no-xvfb). The GUI tests need none of it: xvfb-run starts one for each.

flashscope_gui_log() { echo "gui_runtime_env: $*" >&2; }

# The file names of the host's ld.so cache ("libX11.so.6" ...) and where each one is.
flashscope_gui_host_lib() {  # flashscope_gui_host_lib SONAME -> path on the host, or nothing
  ldconfig -p 2> /dev/null | awk -v name="$1" -v prefix="$FLASHSCOPE_GUI_PREFIX/" \
    '$1 == name && $0 ~ /x86-64/ && index($NF, prefix) != 1 {print $NF; exit}'
  return 0
}

flashscope_gui_setup() {
  local start_xvfb=1 arg
  for arg in "$@"; do
    case $arg in
      --no-xvfb) start_xvfb=0 ;;
      *) flashscope_gui_log "unknown option $arg (only --no-xvfb)"; return 2 ;;
    esac
  done
  local root runtime prefix libdir
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  runtime=${FLASHSCOPE_GUI_RUNTIME:-"$root/.gui-runtime"}
  if [[ ! -f $runtime/MANIFEST.txt ]] || ! compgen -G "$runtime/prefix/*.deb" > /dev/null; then
    flashscope_gui_log "no GUI runtime in $runtime: run scripts/fetch_gui_runtime.sh on a machine with apt and carry .gui-runtime along"
    return 1
  fi
  command -v dpkg-deb > /dev/null || { flashscope_gui_log "needs dpkg-deb (package dpkg)"; return 1; }
  prefix=${FLASHSCOPE_GUI_PREFIX:-/opt/flashscope-gui}
  if ! mkdir -p "$prefix" 2> /dev/null || [[ ! -w $prefix ]]; then
    prefix=${TMPDIR:-/tmp}/flashscope-gui
    mkdir -p "$prefix" || return 1
  fi
  export FLASHSCOPE_GUI_PREFIX=$prefix
  libdir=$prefix/usr/lib/x86_64-linux-gnu

  # The GL client libraries into / where it has none (the device tool's recipe), first, so that
  # the pruning below finds them there.
  local gl_to_root=${FLASHSCOPE_GUI_GL_TO_ROOT:-auto} deb
  if [[ $gl_to_root == 1 || ($gl_to_root == auto && -z $(flashscope_gui_host_lib libGLX.so.0)) ]]; then
    if [[ $(id -u) == 0 ]]; then
      for deb in "$runtime"/gl/*.deb; do dpkg-deb -x "$deb" / || return 1; done
      ldconfig
      flashscope_gui_log "unpacked the GL client libraries (libglvnd) into /: $(basename -a "$runtime"/gl/*.deb | sed 's/_.*//' | tr '\n' ' ')"
    else
      flashscope_gui_log "not root: the GL client libraries stay in $prefix only"
    fi
  fi

  # 1. Unpack (again only when the carried set or the pruning choice changed).
  local stamp
  stamp="$(cksum < "$runtime/MANIFEST.txt") prune=${FLASHSCOPE_GUI_PRUNE:-1}"
  if [[ $(cat "$prefix/.flashscope-stamp" 2> /dev/null) != "$stamp" ]]; then
    rm -rf "${prefix:?}"/* "$prefix/.flashscope-stamp"
    for deb in "$runtime"/prefix/*.deb "$runtime"/gl/*.deb; do
      dpkg-deb -x "$deb" "$prefix" || { flashscope_gui_log "dpkg-deb -x $deb failed"; return 1; }
    done
    mkdir -p "$prefix/stubs" "$prefix/bin" "$prefix/shadowed"
    cp "$runtime"/stubs/*.so* "$prefix/stubs/" 2> /dev/null || true

    # 2. Prune what the host has: its newer copy is used, ours moved aside.
    if [[ ${FLASHSCOPE_GUI_PRUNE:-1} != 0 ]]; then
      local file name kept=0 moved=0
      for file in "$libdir"/lib*.so.[0-9]* "$prefix"/stubs/lib*.so.[0-9]*; do
        [[ -e $file || -L $file ]] || continue
        name=$(basename "$file")
        # The soname is the name up to its first version number (libX11.so.6.4.0 -> libX11.so.6).
        if [[ $name =~ ^(.*\.so\.[0-9]+) ]] && [[ -n $(flashscope_gui_host_lib "${BASH_REMATCH[1]}") ]]; then
          mv "$file" "$prefix/shadowed/"; moved=$((moved + 1))
        else
          kept=$((kept + 1))
        fi
      done
      flashscope_gui_log "kept $kept carried libraries the host lacks; moved $moved the host has to $prefix/shadowed"
    fi
    # Link symlinks (libOpenGL.so -> libOpenGL.so.0) whose target was moved: the host's copy.
    local link target host
    for link in "$libdir"/*.so "$libdir"/*.so.[0-9]*; do
      [[ -L $link && ! -e $link ]] || continue
      target=$(basename "$(readlink "$link")")
      [[ $target =~ ^(.*\.so\.[0-9]+) ]] || continue
      host=$(flashscope_gui_host_lib "${BASH_REMATCH[1]}")
      [[ -n $host ]] && ln -sfn "$host" "$link"
    done
    # pkg-config files name /usr: point them into the prefix.
    sed -i "s|^prefix=/usr\$|prefix=$prefix/usr|" "$libdir"/pkgconfig/*.pc "$prefix"/usr/share/pkgconfig/*.pc 2> /dev/null
    echo "$stamp" > "$prefix/.flashscope-stamp"
    # shellcheck disable=SC2012
    flashscope_gui_log "unpacked $(ls "$runtime"/prefix/*.deb "$runtime"/gl/*.deb | wc -l) packages into $prefix"
  fi

  # 3. Wrappers and the environment.
  cat > "$prefix/bin/Xvfb" <<EOF
#!/bin/sh
# The carried Xvfb with the carried keyboard data (scripts/gui_runtime_env.sh).
exec "$prefix/usr/bin/Xvfb" "\$@" -xkbdir "$prefix/usr/share/X11/xkb"
EOF
  chmod +x "$prefix/bin/Xvfb"
  if ! command -v mcookie > /dev/null; then  # xvfb-run needs it (util-linux)
    printf '#!/bin/sh\nod -An -N16 -tx1 /dev/urandom | tr -d " \\n"; echo\n' > "$prefix/bin/mcookie"
    chmod +x "$prefix/bin/mcookie"
  fi
  if [[ ! -e /usr/bin/xkbcomp ]]; then
    if [[ ${FLASHSCOPE_GUI_XKBCOMP_TO_ROOT:-1} != 0 && $(id -u) == 0 ]]; then
      # shellcheck disable=SC2016  # $LD_LIBRARY_PATH and $@ belong to the wrapper
      printf '#!/bin/sh\n# Written by flashscope scripts/gui_runtime_env.sh: Xvfb runs /usr/bin/xkbcomp.\nLD_LIBRARY_PATH="%s:%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "%s/usr/bin/xkbcomp" "$@"\n' \
        "$libdir" "$prefix/stubs" "$prefix" > /usr/bin/xkbcomp
      chmod +x /usr/bin/xkbcomp
      flashscope_gui_log "wrote /usr/bin/xkbcomp (calls $prefix/usr/bin/xkbcomp): Xvfb runs the keymap compiler there"
    else
      flashscope_gui_log "WARNING: no /usr/bin/xkbcomp and not allowed to write it: Xvfb will fail to compile its keymap"
    fi
  fi
  export PATH="$prefix/bin:$prefix/usr/bin:$PATH"
  export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$libdir:$prefix/stubs"
  export CMAKE_PREFIX_PATH="$prefix/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export PKG_CONFIG_PATH="$libdir/pkgconfig:$prefix/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export LIBGL_DRIVERS_PATH="$libdir/dri"
  local vendor=${FLASHSCOPE_GLX_VENDOR:-} nvidia_glx
  nvidia_glx=$(flashscope_gui_host_lib libGLX_nvidia.so.0)
  if [[ -z $nvidia_glx ]]; then
    nvidia_glx=$(find /usr/local/nvidia /usr/lib/x86_64-linux-gnu /usr/lib64 -maxdepth 3 -name 'libGLX_nvidia.so.0' 2> /dev/null | head -1)
    [[ -n $nvidia_glx ]] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:${nvidia_glx%/*}"
  fi
  if [[ -z $vendor ]]; then
    vendor=mesa
    [[ -n $nvidia_glx ]] && vendor=nvidia
  fi
  export __GLX_VENDOR_LIBRARY_NAME=$vendor
  flashscope_gui_log "GLX vendor: $vendor (NVIDIA GLX library: ${nvidia_glx:-not found}); Xvfb: $(command -v Xvfb); xvfb-run: $(command -v xvfb-run)"

  # Libraries that resolve nowhere (a host lacking one of BASE_PACKAGES, say) show here first.
  local binary missing
  for binary in "$prefix/usr/bin/Xvfb" "$prefix/usr/bin/xkbcomp" "$libdir/dri/swrast_dri.so" \
                "$libdir/libGLX_mesa.so.0" "$libdir/libglfw.so.3"; do
    [[ -e $binary ]] || continue
    missing=$(ldd "$binary" 2> /dev/null | awk '/not found/ {print $1}' | tr '\n' ' ')
    [[ -z $missing ]] || flashscope_gui_log "WARNING: ${binary#"$prefix"/} needs libraries found nowhere: $missing"
  done
  [[ $start_xvfb == 1 ]] || return 0
  flashscope_gui_start_xvfb
}

# 4. A virtual X server on the first free display from :90 (DISPLAY, FLASHSCOPE_XVFB_PID).
flashscope_gui_start_xvfb() {
  local display=90 log_dir=${FLASHSCOPE_GUI_LOG_DIR:-/tmp} waited
  while [[ -e /tmp/.X$display-lock || -e /tmp/.X11-unix/X$display ]]; do display=$((display + 1)); done
  mkdir -p "$log_dir"
  Xvfb ":$display" -screen 0 1920x1200x24 -nolisten tcp > "$log_dir/xvfb-$display.log" 2>&1 &
  export FLASHSCOPE_XVFB_PID=$!
  for waited in $(seq 1 100); do
    [[ -S /tmp/.X11-unix/X$display ]] && break
    if ! kill -0 "$FLASHSCOPE_XVFB_PID" 2> /dev/null; then
      flashscope_gui_log "Xvfb :$display exited at start-up ($log_dir/xvfb-$display.log):"
      tail -20 "$log_dir/xvfb-$display.log" >&2
      unset FLASHSCOPE_XVFB_PID
      return 1
    fi
    sleep 0.1
  done
  [[ -S /tmp/.X11-unix/X$display ]] || { flashscope_gui_log "Xvfb :$display did not open its socket in 10 s"; return 1; }
  export DISPLAY=:$display
  flashscope_gui_log "Xvfb running on $DISPLAY (pid $FLASHSCOPE_XVFB_PID, log $log_dir/xvfb-$display.log, ${waited}00 ms to start)"
}

flashscope_gui_stop() {
  if [[ -n ${FLASHSCOPE_XVFB_PID:-} ]]; then
    kill "$FLASHSCOPE_XVFB_PID" 2> /dev/null || true
    wait "$FLASHSCOPE_XVFB_PID" 2> /dev/null || true
    unset FLASHSCOPE_XVFB_PID DISPLAY
  fi
}

flashscope_gui_setup "$@"
