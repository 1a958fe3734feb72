#!/usr/bin/env bash
# The API-breakage check: compares the public API of the library products with the baseline
# commit named in .ci/api-baseline, using `swift package diagnose-api-breaking-changes` (the
# toolchain's swift-api-digester). A breaking change fails the check; an intended one is made by
# moving the baseline forward in the same change (and saying so in the commit message).
#
# The baseline is a commit hash in a file, not a tag: it survives a merge (the commit stays in
# main's history) and any clone that has the history; a shallow clone is deepened first.
#
# Usage: bash Scripts/check-api-breakage.sh        (from anywhere inside the repository)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

products=(LongLink LongLinkServer LongLinkTesting LongLinkWire LongLinkRedis)
baseline="$(grep -v '^[[:space:]]*#' .ci/api-baseline | tr -d '[:space:]')"
[[ "$baseline" =~ ^[0-9a-f]{7,40}$ ]] || {
    echo "check-api-breakage: .ci/api-baseline holds no commit hash" >&2
    exit 1
}
if ! git cat-file -e "$baseline^{commit}" 2>/dev/null; then
    if [[ "$(git rev-parse --is-shallow-repository)" == true ]]; then
        git fetch --quiet --unshallow || true
    fi
    git cat-file -e "$baseline^{commit}" 2>/dev/null || {
        echo "check-api-breakage: the baseline $baseline is not in this clone's history;" \
            "set .ci/api-baseline to a commit of main" >&2
        exit 1
    }
fi
if [[ "$(git rev-parse "$baseline^{commit}")" == "$(git rev-parse HEAD)" ]]; then
    echo "check-api-breakage: HEAD is the baseline itself; nothing to compare"
    exit 0
fi
echo "check-api-breakage: comparing ${products[*]} with $baseline ($(git log -1 --format=%s "$baseline"))"
start=$SECONDS
swift package diagnose-api-breaking-changes "$baseline" --products "${products[@]}"
echo "check-api-breakage: no breaking change (took $((SECONDS - start)) s)"
