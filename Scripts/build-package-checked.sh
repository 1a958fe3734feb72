#!/usr/bin/env bash
# Builds one SwiftPM package that depends on this repository (an example, README's scratch
# package) and fails on an error or on any compiler warning from a file inside this repository.
# Shared by build-examples.sh and check-readme-swift.sh.
#
# Usage: bash Scripts/build-package-checked.sh LABEL PACKAGE_PATH
#   LABEL names the package in the messages (for example build-examples: Examples/ChatRoom).
set -euo pipefail

if [[ $# -ne 2 ]]; then
    echo "usage: bash Scripts/build-package-checked.sh LABEL PACKAGE_PATH" >&2
    exit 2
fi
label="$1"
package="$2"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

status=0
log="$(mktemp)"
if ! swift build --package-path "$package" 2>&1 | tee "$log"; then
    echo "$label failed to build" >&2
    status=1
fi
# Headline diagnostics only ("path:line:col: warning:" or "warning:" at the start of a line),
# and only for files inside this repository (a #sourceLocation naming README.md counts).
warnings="$(awk -v root="$root/" '
    /^warning:/ || /^[^ |]+:[0-9]+:[0-9]+: warning:/ {
        if (substr($0, 1, 1) != "/" || index($0, root) == 1) print
    }' "$log")"
rm -f "$log"
if [[ -n "$warnings" ]]; then
    echo "$label built with warnings:" >&2
    printf '%s\n' "$warnings" >&2
    status=1
fi
exit $status
