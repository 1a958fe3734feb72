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
    log="$(mktemp)"
    if ! swift build --package-path "$example" 2>&1 | tee "$log"; then
        echo "build-examples: $example failed to build" >&2
        status=1
    fi
    # Headline diagnostics only ("path:line:col: warning:" or "warning:" at the start of a line),
    # and only for files inside this repository.
    warnings="$(awk -v root="$root/" '
        /^warning:/ || /^[^ |]+:[0-9]+:[0-9]+: warning:/ {
            if (substr($0, 1, 1) != "/" || index($0, root) == 1) print
        }' "$log")"
    rm -f "$log"
    if [[ -n "$warnings" ]]; then
        echo "build-examples: $example built with warnings:" >&2
        printf '%s\n' "$warnings" >&2
        status=1
    fi
done
if [[ $status -eq 0 ]]; then
    echo "build-examples: every example built without warnings"
fi
exit $status
