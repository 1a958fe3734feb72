#!/usr/bin/env bash
# Builds every example under Examples/ (each one its own SwiftPM package that depends on this
# repository by path, so no network is needed) and fails on an error or on any compiler warning
# from this repository's files.
#
# Usage: bash Scripts/build-examples.sh        (from anywhere inside the repository)
# Each example builds into its own Examples/NAME/.build (ignored by git).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

status=0
for manifest in Examples/*/Package.swift; do
    example="$(dirname "$manifest")"
    echo "build-examples: building $example"
    bash Scripts/build-package-checked.sh "build-examples: $example" "$example" || status=1
done
if [[ $status -eq 0 ]]; then
    echo "build-examples: every example built without warnings"
fi
exit $status
