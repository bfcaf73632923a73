#!/usr/bin/env bash
# Regenerates the OpenAPI document from the swag annotations in api/ with a
# pinned swag. Usage: openapi/generate.sh [OUT_DIR] (default: openapi/).
# .ci/openapi-check runs it into a temporary directory and diffs.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-openapi}"
SWAG_VERSION=v1.16.6
go run "github.com/swaggo/swag/cmd/swag@${SWAG_VERSION}" init \
  --quiet \
  --generalInfo doc.go \
  --dir ./api,./sim,./hardware,./models,./internal \
  --output "$out" \
  --exclude ./internal/testkit \
  --outputTypes json,yaml
