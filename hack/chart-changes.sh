#!/usr/bin/env bash
# Writes Artifact Hub's artifacthub.io/changes annotation of the chart from
# CHANGELOG.md's section for VERSION (hack/changelog-section.sh): one entry
# per top-level bullet, its kind from the section's heading (Added: added,
# Changed: changed, Deprecated, Removed, Fixed, Security), its description
# the bullet's bold title, else its first sentence. With CHART (a
# Chart.yaml whose last key is annotations), the entry list is appended to
# that file's annotations (the release workflow does so before helm package);
# without, it is printed.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:?usage: chart-changes.sh <version> [Chart.yaml]}
chart=${2:-}
changes=$(./hack/changelog-section.sh "$version" | awk '
  function flush() {
    if (text == "" || kind == "") { text = ""; return }
    if (substr(text, 1, 2) == "**" && (n = index(substr(text, 3), "**")) > 0) {
      text = substr(text, 3, n - 1)      # the bold title
    } else if ((n = index(text, ". ")) > 0) {
      text = substr(text, 1, n - 1)      # else the first sentence
    }
    sub(/[.:]$/, "", text)
    gsub(/`/, "", text); gsub(/"/, "\\\"", text)
    printf "- kind: %s\n  description: \"%s\"\n", kind, text
    text = ""
  }
  /^### / {
    flush()
    h = tolower($2)
    kind = (h == "added" || h == "changed" || h == "deprecated" || h == "removed" || h == "fixed" || h == "security") ? h : ""
    next
  }
  /^- / { flush(); text = substr($0, 3); next }
  /^  [^ ]/ && text != "" { t = $0; sub(/^ +/, "", t); text = text " " t; next }
  /^$/ { flush() }
  END { flush() }')
if [ -z "$changes" ]; then
  echo "chart-changes: the $version section of CHANGELOG.md has no bullet under a known heading" >&2
  exit 1
fi
if [ -z "$chart" ]; then
  printf '%s\n' "$changes"
  exit 0
fi
if [ "$(grep -E '^[a-zA-Z]' "$chart" | tail -n1 | cut -d: -f1)" != annotations ]; then
  echo "chart-changes: the last key of $chart is not annotations" >&2
  exit 1
fi
{
  echo "  artifacthub.io/changes: |"
  printf '%s\n' "$changes" | sed 's/^/    /'
} >> "$chart"
