#!/usr/bin/env bash
# Checks that the committed frame codec (Sources/LongLinkWire/Generated/) is what
# Scripts/generate-codec.py writes from proto/longlink/v1/longlink.proto, and that the generator is
# deterministic: two runs into scratch directories give byte-identical files, equal to the committed ones.
#
# Usage: bash Scripts/check-codec.sh   (needs python3 with protobuf and grpcio-tools)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

committed="Sources/LongLinkWire/Generated"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

python3 Scripts/generate-codec.py --output "$scratch/first"
python3 Scripts/generate-codec.py --output "$scratch/second"
if ! diff -r "$scratch/first" "$scratch/second"; then
    echo "check-codec: two runs of Scripts/generate-codec.py wrote different files: the generator is not deterministic" >&2
    exit 1
fi
if ! diff -r "$committed" "$scratch/first"; then
    echo "check-codec: $committed differs from what the generator writes (diff above)." >&2
    echo "check-codec: regenerate it with: python3 Scripts/generate-codec.py" >&2
    exit 1
fi
echo "check-codec: $committed matches the schema ($(ls "$committed" | wc -l) files, generator deterministic)"
