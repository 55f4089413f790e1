#!/usr/bin/env bash
# console-assets.sh installs the web console's libraries (apache-arrow and
# uPlot, pinned by console/web/package-lock.json) with npm ci and copies
# their builds, with their licences, into console/assets/vendor, which the
# Go build embeds. It does nothing when they are there for this lockfile.
set -euo pipefail
cd "$(dirname "$0")/.."
web=console/web
out=console/assets/vendor
stamp="$out/.lock-sha256"
want=$(sha256sum "$web/package-lock.json" | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
	exit 0
fi
command -v npm >/dev/null || { echo "console-assets: npm (Node.js) is needed to build the console's libraries" >&2; exit 1; }
echo "console-assets: installing the console's libraries from $web/package-lock.json"
npm ci --prefix "$web" --ignore-scripts --no-audit --no-fund --loglevel=error
mods="$web/node_modules"
rm -rf "$out" && mkdir -p "$out"
cp "$mods/apache-arrow/Arrow.es2015.min.js" "$out/"
cp "$mods/apache-arrow/LICENSE.txt" "$out/apache-arrow-LICENSE.txt"
cp "$mods/uplot/dist/uPlot.iife.min.js" "$mods/uplot/dist/uPlot.min.css" "$out/"
cp "$mods/uplot/LICENSE" "$out/uPlot-LICENSE.txt"
echo "$want" > "$stamp"
