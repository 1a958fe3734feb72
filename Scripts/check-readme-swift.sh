#!/usr/bin/env bash
# Compiles the Swift code blocks of README.md against this checkout, so that the Quick start
# cannot drift from the API: each ```swift block becomes a library target of its own in a scratch
# package (in a temporary folder) that depends on this repository by path, and `swift build` must
# build them all without an error or a warning. The scratch package builds this repository the
# way an app's package does, in its own .build, as Scripts/build-examples.sh does for Examples/.
#
# A block that is a fragment (statements outside a function, a variable it does not declare, a
# package this one does not ship) is marked by the line `<!-- not compiled -->` right before its
# fence (blank lines between are fine); GitHub does not render the comment. A compiled block
# imports what it uses, among this package's library products and the blocks compiled as a module
# of their own: the line `<!-- compiled as module NAME -->` right before a fence makes the block
# the target NAME, which later blocks import (the Quick start's shared contract, say).
# Diagnostics point at README.md's own lines.
#
# Usage: bash Scripts/check-readme-swift.sh [--keep DIR]   (from anywhere inside the repository)
#   --keep DIR   build the scratch package in DIR and leave it there (a second run reuses its
#                .build); by default a temporary folder, removed at the end.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
readme="$root/README.md"
products=(LongLink LongLinkServer LongLinkTesting LongLinkWire LongLinkRedis)

scratch=""
if [[ "${1:-}" == "--keep" && -n "${2:-}" ]]; then
    scratch="$2"
    mkdir -p "$scratch"
    scratch="$(cd "$scratch" && pwd)"
elif [[ $# -gt 0 ]]; then
    echo "usage: bash Scripts/check-readme-swift.sh [--keep DIR]" >&2
    exit 2
else
    scratch="$(mktemp -d)"
    trap 'rm -rf "$scratch"' EXIT
fi
rm -rf "$scratch/Sources"
mkdir -p "$scratch/Sources"

# One folder per compiled block, Sources/NAME/Block.swift (NAME is ReadmeBlockN, or the block's
# module name), starting with a #sourceLocation at the block's first line in README.md; prints
# "N LINE NAME" for each.
blocks="$(awk -v out="$scratch/Sources" -v readme="$readme" '
    function close_block() { close(file); inside = 0 }
    inside && /^```/ { close_block(); next }
    inside { print > file; next }
    /^<!-- not compiled -->[[:space:]]*$/ { skip = 1; next }
    /^<!-- compiled as module [A-Za-z_][A-Za-z0-9_]* -->[[:space:]]*$/ { module = $5; next }
    /^```swift[[:space:]]*$/ {
        if (skip) { skip = 0; module = ""; fragment = 1; next }
        count += 1
        name = module != "" ? module : "ReadmeBlock" count
        module = ""
        dir = out "/" name
        system("mkdir -p \"" dir "\"")
        file = dir "/Block.swift"
        printf "#sourceLocation(file: \"%s\", line: %d)\n", readme, NR + 1 > file
        print count, NR + 1, name
        inside = 1
        next
    }
    fragment && /^```/ { fragment = 0; next }
    fragment { next }
    /^[[:space:]]*$/ { next }
    { skip = 0; module = "" }
' "$readme")"

if [[ -z "$blocks" ]]; then
    echo "check-readme-swift: README.md has no Swift block to compile" >&2
    exit 1
fi

# Each block's target depends on the products and the block modules it imports; an import of
# anything else (a package this one does not depend on) cannot build here, so the block must be
# marked a fragment.
block_modules=" $( (awk '{print $3}' <<<"$blocks" | grep -v '^ReadmeBlock' || true) | paste -sd' ' -) "
targets=""
status=0
while read -r number line name; do
    file="$scratch/Sources/$name/Block.swift"
    dependencies=""
    while read -r module; do
        [[ -z "$module" ]] && continue
        if [[ " ${products[*]} " == *" $module "* ]]; then
            dependencies+=".product(name: \"$module\", package: \"LongLink\"), "
        elif [[ "$block_modules" == *" $module "* ]]; then
            dependencies+="\"$module\", "
        elif ! [[ "$module" =~ ^(Foundation|Dispatch|Synchronization|Glibc|Darwin|Testing)$ ]]; then
            echo "check-readme-swift: README.md:$line: the block imports $module, which this package does not" \
                "provide; mark it <!-- not compiled -->" >&2
            status=1
        fi
    done < <(sed -n 's/^\(@[A-Za-z_]*[[:space:]]\{1,\}\)\{0,1\}import[[:space:]]\{1,\}\([A-Za-z_][A-Za-z0-9_]*\).*/\2/p' "$file")
    targets+="        .target(name: \"$name\", dependencies: [$dependencies]),"$'\n'
done <<<"$blocks"
[[ $status -eq 0 ]] || exit $status

cat >"$scratch/Package.swift" <<EOF
// swift-tools-version: 6.2
// Written by Scripts/check-readme-swift.sh: README.md's Swift blocks, one target each.
import PackageDescription

let package = Package(
    name: "ReadmeSwift",
    platforms: [.macOS(.v15), .iOS(.v18)],
    dependencies: [.package(name: "LongLink", path: "$root")],
    targets: [
$targets    ]
)
EOF

echo "check-readme-swift: building $(wc -l <<<"$blocks") block(s) of README.md (lines $(awk '{print $2}' <<<"$blocks" | paste -sd, -))"
if ! bash "$root/Scripts/build-package-checked.sh" "check-readme-swift: README.md's Swift blocks" "$scratch"; then
    echo "check-readme-swift: a Swift block of README.md does not compile, or warns (see README.md:LINE above)" >&2
    status=1
fi
if [[ $status -eq 0 ]]; then
    echo "check-readme-swift: every Swift block of README.md compiled without warnings"
fi
exit $status
