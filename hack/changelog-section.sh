#!/usr/bin/env bash
# Prints the section of CHANGELOG.md for VERSION (its "## [VERSION]" heading
# up to the next "## "), the release notes of that tag; fails when there is none.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:?usage: changelog-section.sh <version>}
section=$(awk -v v="## [$version]" 'index($0, v) == 1 {on = 1; next} on && /^## / {exit} on {print}' CHANGELOG.md)
if [ -z "${section//[[:space:]]/}" ]; then
  echo "changelog-section: CHANGELOG.md has no section \"## [$version]\"" >&2
  exit 1
fi
printf '%s\n' "$section"
