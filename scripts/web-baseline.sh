#!/usr/bin/env bash
# Builds the browser client of another commit (default: main) into .artifacts/web-baseline/<commit>/dist,
# for the side-by-side page timings: DSH_WEB_BASELINE_DIST=<that dist> npm run test:e2e -- timings.
# The old client sources are extracted under .artifacts (no worktree, nothing registered in git), so
# Node finds this checkout's node_modules (vite, preact, the @dsh workspace links) by walking up.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
commit=$(git -C "$repo" rev-parse --short "${1:-main}")
tree="$repo/.artifacts/web-baseline/$commit"
rm -rf "$tree"
mkdir -p "$tree"
git -C "$repo" archive "$commit" tsconfig.base.json apps/web packages/surfaces/src | tar -x -C "$tree"
(cd "$tree/apps/web" && "$repo/node_modules/.bin/vite" build --logLevel warn --outDir "$tree/dist" --emptyOutDir)
echo "$tree/dist"
