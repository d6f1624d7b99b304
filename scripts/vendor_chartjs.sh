#!/usr/bin/env bash
# Refresh the vendored Chart.js (the run page's charts) from the npm registry: the pinned
# version's UMD build and license, with their sha256 in SHA256SUMS (checked by a test).
set -euo pipefail
VERSION=4.4.9
cd "$(dirname "$0")/.."
DEST=frontend/static/vendor/chartjs
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "chart.js@$VERSION" >/dev/null && tar xzf "chart.js-$VERSION.tgz")
mkdir -p "$DEST"
cp "$tmp/package/dist/chart.umd.js" "$tmp/package/LICENSE.md" "$DEST/"
echo "$VERSION" > "$DEST/VERSION"
(cd "$DEST" && sha256sum chart.umd.js LICENSE.md VERSION > SHA256SUMS)
echo "Chart.js $VERSION in $DEST"
