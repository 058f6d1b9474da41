# Sourced by the install scripts: `link_cached TARGET LINK` points LINK (inside the clone's .cache/)
# at TARGET (in the cache outside the clone), atomically, doing nothing when it already does.
link_cached() {
  local target="$1" link="$2"
  mkdir -p "$(dirname "$link")"
  if [ "$(readlink "$link" 2>/dev/null || true)" = "$target" ]; then
    return
  fi
  if [ -e "$link" ] && [ ! -L "$link" ]; then
    rm -rf "$link"
  fi
  ln -sfn "$target" "$link.tmp.$$"
  mv -fT "$link.tmp.$$" "$link"
}
