#!/usr/bin/env bash
# Precision on eighteen more JAX libraries, none of them in the repository nor in
# ../shared/realworld/libraries.sh: downloads their pinned wheels (or sdists) once into
# ~/.cache/jaxfix-more-libraries, then prints each finding of `jaxfix check` and their count.
#
#     bash scripts/more_libraries.sh [.venv/bin/jaxfix]
#
# Each finding is judged in docs/reliability.md ("Measured on code nobody here wrote").
set -euo pipefail
JAXFIX=${1:-.venv/bin/jaxfix}
HOME_=${XDG_CACHE_HOME:-$HOME/.cache}/jaxfix-more-libraries
SRC=$HOME_/src
if [ ! -f "$SRC/.done" ]; then
  rm -rf "$HOME_" && mkdir -p "$SRC" "$HOME_/dl"
  python3 -m pip download -q --no-deps -d "$HOME_/dl" \
    bayeux-ml==0.1.15 dynamax==1.0.3 flowjax==19.1.2 haliax==1.3 interpax==0.3.16 \
    jax-cosmo==0.1.0 jaxlie==1.5.0 jaxns==3.0.0 jumanji==1.1.2 levanter==1.1 \
    mujoco-mjx==3.17.0 objax==1.8.0 oryx==0.2.9 pgx==2.6.0 qdax==0.5.0 quax==0.4.6 \
    sbx-rl==0.28.0 trax==1.4.1
  for archive in "$HOME_"/dl/*; do
    case "$archive" in
      *.whl) (cd "$SRC" && unzip -q -o "$archive" '*.py' 2>/dev/null) || true;;
      *.tar.gz) tar -xzf "$archive" -C "$SRC" --wildcards '*.py' 2>/dev/null || true;;
    esac
  done
  touch "$SRC/.done"
fi
cd "$SRC"
out=$("$JAXFIX" check --no-cache --exit-zero . 2>/dev/null | grep -E '^[^ ].*\.py:[0-9]+:[0-9]+: [A-Z]+[0-9]+ ' || true)
[ -n "$out" ] && echo "$out"
echo "more libraries: $(printf '%s' "$out" | grep -c . || true) findings over $(find . -name '*.py' | wc -l) files"
