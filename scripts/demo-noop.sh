#!/usr/bin/env bash
# The noop agent end to end (filled in with the engine-core issue).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q --bin berth
echo "demo-noop: the engine is not built yet"
