#!/usr/bin/env bash
# Builds the DocC archive for the LongLink module without the DocC plugin:
# extracts symbol graphs with SwiftPM, keeps only LongLink's, LongLinkWire's and LongLinkCore's,
# qualifies links to re-exported symbols (Scripts/qualify-doc-links.py, needs python3), then
# runs `docc convert` with warnings treated as errors.
#
# Usage: bash Scripts/build-docs.sh        (from anywhere inside the repository)
# Output: .build/docs/LongLink.doccarchive
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

docc_bin="${DOCC:-$(command -v docc || true)}"
if [[ -z "$docc_bin" ]]; then
    # docc ships with the toolchain, next to swift.
    swift_bin="$(command -v swift)"
    docc_bin="$(dirname "$(readlink -f "$swift_bin")")/docc"
fi
if [[ ! -x "$docc_bin" ]]; then
    echo "build-docs: docc not found (set DOCC=/path/to/docc)" >&2
    exit 1
fi

echo "build-docs: extracting symbol graphs"
swift package dump-symbol-graph --minimum-access-level public

# Find the folder robustly: its name depends on the host triple, so take the
# most recently written LongLink.symbols.json under .build.
graph="$(find .build -path '*/symbolgraph/LongLink.symbols.json' -print0 | xargs -0 -r ls -t | head -n 1)"
if [[ -z "$graph" ]]; then
    echo "build-docs: LongLink.symbols.json not found under .build" >&2
    exit 1
fi
graph_dir="$(dirname "$graph")"
echo "build-docs: symbol graphs in $graph_dir"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Only the documented modules: LongLink (the client), LongLinkWire, which the
# client builds on (frames, payload codecs), and LongLinkCore (StatusCode,
# LongLinkError). DocC accepts them in one archive, each as a module page of its own.
shopt -s nullglob
for module in LongLink LongLinkWire LongLinkCore; do
    for file in "$graph_dir/$module.symbols.json" "$graph_dir/$module"@*.symbols.json; do
        cp "$file" "$work/"
    done
done
shopt -u nullglob
echo "build-docs: using $(cd "$work" && ls | tr '\n' ' ')"

# LongLink re-exports LongLinkCore, LongLinkWire and LongLinkTransport and its comments name their
# types unqualified; qualify those links for this archive (see the script's header).
python3 Scripts/qualify-doc-links.py "$work" "$graph_dir"

output=".build/docs/LongLink.doccarchive"
mkdir -p "$(dirname "$output")"
rm -rf "$output"

"$docc_bin" convert Docs.docc \
    --additional-symbol-graph-dir "$work" \
    --output-path "$output" \
    --fallback-display-name LongLink \
    --fallback-bundle-identifier org.longlink \
    --warnings-as-errors

echo "build-docs: wrote $output"
