#!/bin/sh
# check-layers.sh - the source tree's layering rule, checked.
#
# src/LAYER/*.c and include/ccsweep/LAYER/*.h form one layer each; the layers,
# lowest first, are the Makefile's LAYERS. A file may include headers of its
# own layer and of lower layers only. Fails (exit 1) on an upward include, on an
# include of a header that is not in a layer, on a source or header outside
# every layer, and on a cycle among modules: module cost/opcost is
# src/cost/opcost.c with include/ccsweep/cost/opcost.h, and it depends on every
# module whose header either of them includes. Across layers a cycle is
# impossible once no include points upward; within a layer this finds it.
# It also fails when README.md's source tour (the section '### A tour of the
# source') names neither NAME.c nor NAME.h of a module src/LAYER/NAME.c, so
# the tour a newcomer reads lists every file.
# Run by 'make check'; by hand: sh tools/check-layers.sh [ROOT].
set -u
root=${1:-$(dirname "$0")/..}
cd "$root" || exit 1
layers=$(sed -n 's/^LOW_LAYERS *:= *//p' Makefile)
layers="$layers $(sed -n 's/^LAYERS *:= *\$(LOW_LAYERS) *//p' Makefile)"
[ -n "$layers" ] || { echo "check-layers: no LAYERS in Makefile" >&2; exit 1; }

rank() { # rank LAYER: its position in $layers (1 = lowest), 0 when absent
    i=0
    for l in $layers; do
        i=$((i + 1))
        [ "$l" = "$1" ] && { echo $i; return; }
    done
    echo 0
}

bad=0
edges=$(mktemp)
trap 'rm -f "$edges"' EXIT
for f in $(find src include/ccsweep -name '*.[ch]' | sort); do
    case $f in
    src/*) l=${f#src/} ;;
    include/ccsweep/*) l=${f#include/ccsweep/} ;;
    esac
    case $l in
    */*) l=${l%%/*} ;;
    *) echo "check-layers: $f: not in a layer folder" >&2; bad=1; continue ;;
    esac
    r=$(rank "$l")
    [ "$r" = 0 ] && { echo "check-layers: $f: folder '$l' is not a layer in the Makefile's LAYERS" >&2; bad=1; continue; }
    grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"ccsweep/' "$f" | while IFS= read -r line; do
        n=${line%%:*}
        h=$(printf '%s\n' "$line" | sed 's/.*"ccsweep\/\([^"]*\)".*/\1/')
        case $h in
        */*) hl=${h%%/*} ;;
        *) hl= ;;
        esac
        hr=0
        [ -n "$hl" ] && hr=$(rank "$hl")
        if [ "$hr" = 0 ] || [ ! -f "include/ccsweep/$h" ]; then
            echo "check-layers: $f:$n: includes ccsweep/$h, which is not a header of a layer" >&2
            echo x >> "$edges.bad"
        elif [ "$hr" -gt "$r" ]; then
            echo "check-layers: $f:$n: layer '$l' includes ccsweep/$h of the higher layer '$hl'" >&2
            echo x >> "$edges.bad"
        else
            m=${f#src/}; m=${m#include/ccsweep/}; m=${m%.?}
            [ "$m" != "${h%.h}" ] && echo "$m ${h%.h}" >> "$edges"
        fi
    done
done
[ -f "$edges.bad" ] && { bad=1; rm -f "$edges.bad"; }
# tsort names the modules of a cycle on stderr ("input contains a loop")
touch "$edges.err"
[ -s "$edges" ] && tsort "$edges" > /dev/null 2> "$edges.err"
if [ -s "$edges.err" ]; then
    echo "check-layers: a dependency cycle among modules (A includes B's header, B includes A's):" >&2
    sed 's/^tsort: /  /' "$edges.err" >&2
    bad=1
fi
rm -f "$edges.err"
if [ -f README.md ]; then
    tour=$(sed -n '/^### A tour of the source/,/^## /p' README.md)
    for f in $(find src -name '*.c' | sort); do
        n=$(basename "$f" .c)
        case $tour in
        *"\`$n.c\`"* | *"\`$n.h\`"*) ;;
        *) echo "check-layers: $f: README.md's source tour names neither $n.c nor $n.h" >&2; bad=1 ;;
        esac
    done
fi
if [ "$bad" = 0 ]; then
    echo "check-layers: ok ($(echo $layers | wc -w) layers: $layers)"
fi
exit $bad
