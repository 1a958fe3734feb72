#!/usr/bin/env bash
# The Swift version proof: prints the toolchain CI runs, and checks that the minimum the package
# states agrees everywhere it is stated (Package.swift's swift-tools-version, the examples'
# manifests, README's "Requirements: Swift X.Y or later") and that the toolchain meets it.
#
# Usage: bash Scripts/check-swift-version.sh        (from anywhere inside the repository)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

tools_version() {
    sed -n '1s|^// swift-tools-version: *\([0-9][0-9.]*\).*|\1|p' "$1"
}

minimum="$(tools_version Package.swift)"
[[ -n "$minimum" ]] || {
    echo "check-swift-version: no swift-tools-version on the first line of Package.swift" >&2
    exit 1
}
toolchain="$(swift --version 2>&1 | sed -n 's/.*Swift version \([0-9][0-9.]*\).*/\1/p' | head -n 1)"
echo "check-swift-version: toolchain $toolchain ($(swift --version 2>&1 | head -n 1))"
echo "check-swift-version: Package.swift swift-tools-version $minimum"

status=0
readme="$(sed -n 's/^Requirements: Swift \([0-9][0-9.]*\) or later.*/\1/p' README.md | head -n 1)"
if [[ "$readme" != "$minimum" ]]; then
    echo "check-swift-version: README states Swift ${readme:-(nothing found)} or later, Package.swift $minimum" >&2
    status=1
else
    echo "check-swift-version: README states Swift $readme or later"
fi
for manifest in Examples/*/Package.swift; do
    example="$(tools_version "$manifest")"
    if [[ "$example" != "$minimum" ]]; then
        echo "check-swift-version: $manifest has swift-tools-version ${example:-(none)}, not $minimum" >&2
        status=1
    fi
done
# The toolchain must be at least the minimum (sort -V orders version numbers).
if [[ "$(printf '%s\n%s\n' "$minimum" "$toolchain" | sort -V | head -n 1)" != "$minimum" ]]; then
    echo "check-swift-version: toolchain $toolchain is older than the stated minimum $minimum" >&2
    status=1
fi
[[ $status -eq 0 ]] && echo "check-swift-version: the stated minimum agrees everywhere and the toolchain meets it"
exit $status
