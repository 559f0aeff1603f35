#!/usr/bin/env bash
# The whole test suite, on a fresh clone in any directory: installs what the
# tests need (as root, from Debian's packages and PyPI; as a user it names the
# packages and stops), builds the binaries the tests run (berth, berth-helper,
# berth-exec-shim), then runs `cargo test --workspace`, then the engine suite a
# second time with PostgreSQL as its store (BERTH_TEST_STORE=postgres). Extra
# arguments go to cargo test (`scripts/test.sh -p berth-policy`,
# `scripts/test.sh -- --nocapture`) and skip the second pass.
#
# Needs a running Docker engine: engine, sandbox and serve tests use real
# containers. Under CI=true a missing engine is a failure, never a skip.
set -euo pipefail
cd "$(dirname "$0")/.."

# --- what a fresh machine lacks -------------------------------------------
apt_need=()
command -v busybox >/dev/null 2>&1 || apt_need+=(busybox-static)
# The agent image copies Debian's git (images/agent/recipe.toml).
[ -x /usr/bin/git ] || apt_need+=(git)
# The MCP tests' client is the official Python SDK, in a venv (below).
command -v python3 >/dev/null 2>&1 || apt_need+=(python3)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || apt_need+=(python3-venv)
# berth serve's browser test drives Debian's headless Chromium over WebDriver.
command -v chromium >/dev/null 2>&1 || apt_need+=(chromium)
command -v chromedriver >/dev/null 2>&1 || apt_need+=(chromium-driver)
# The per-berth disk images (ext4 on a loop device) when the tests run as root.
command -v mkfs.ext4 >/dev/null 2>&1 || apt_need+=(e2fsprogs)
# The https:// forge test makes its CA and certificate with openssl.
command -v openssl >/dev/null 2>&1 || apt_need+=(openssl)
# The engine suite runs a second time on PostgreSQL (Debian's server, which
# the tests start themselves: tests/common/postgres.rs).
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || apt_need+=(postgresql)
# Installed with the build's own tools (cmake for libgit2's zlib-ng, a C
# compiler); as a user it names the packages and stops.
scripts/build-deps.sh ${apt_need[@]+"${apt_need[@]}"}
# tests/mcp.rs drives `berth mcp` with the Python MCP SDK from this venv, and
# checks conformance with a second, independent client library (FastMCP's
# Client, which brings jsonschema) from the same venv.
mcp_venv="${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/berth-mcp-venv"
if ! "$mcp_venv/bin/python" -c 'import mcp, fastmcp, jsonschema' >/dev/null 2>&1; then
  echo "== installing the Python MCP SDK and FastMCP into $mcp_venv"
  python3 -m venv "$mcp_venv"
  "$mcp_venv/bin/pip" install --quiet --disable-pip-version-check 'mcp>=2.3,<3' 'fastmcp>=4.2,<5' jsonschema
fi
export BERTH_MCP_PYTHON="$mcp_venv/bin/python"
# tests/serve_browser.rs checks the page's accessibility with axe-core: the
# axe.min.js that PyPI's axe-selenium-python wheel carries (2.1.6: axe-core
# 3.1.1), downloaded by pip and unpacked here, injected over WebDriver.
axe_dir="${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/berth-axe"
if [ ! -s "$axe_dir/axe.min.js" ]; then
  echo "== unpacking axe-core from the axe-selenium-python wheel into $axe_dir"
  mkdir -p "$axe_dir"
  "$mcp_venv/bin/pip" download --quiet --disable-pip-version-check --no-deps \
    --only-binary :all: 'axe-selenium-python==2.1.6' -d "$axe_dir"
  "$mcp_venv/bin/python" - "$axe_dir" <<'EOF'
import glob, sys, zipfile
d = sys.argv[1]
with zipfile.ZipFile(glob.glob(d + "/axe_selenium_python-2.1.6-*.whl")[0]) as z:
    js = z.read("axe_selenium_python/node_modules/axe-core/axe.min.js")
with open(d + "/axe.min.js", "wb") as f:
    f.write(js)
EOF
fi
export BERTH_AXE_JS="$axe_dir/axe.min.js"
if ! docker info >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then
    echo "== the Docker engine does not answer at /var/run/docker.sock; starting it"
    (service docker start || dockerd >/tmp/dockerd.log 2>&1 &) || true
    for _ in $(seq 1 30); do docker info >/dev/null 2>&1 && break; sleep 1; done
  fi
  if ! docker info >/dev/null 2>&1; then
    echo "scripts/test.sh: the Docker engine does not answer (docker info failed)." >&2
    echo "  start it (sudo systemctl start docker) or run as a user in the docker group." >&2
    exit 2
  fi
fi

# --- the suite ----------------------------------------------------------------
echo "== building the binaries the tests run"
cargo build --bin berth --bin berth-helper --bin berth-exec-shim
echo "== cargo test --workspace $*"
cargo test --workspace "$@"
# The engine suite again with PostgreSQL as the store (one database per
# test), when the whole suite ran (no arguments narrowed it).
if [ $# -eq 0 ]; then
  echo "== the engine suite on PostgreSQL (BERTH_TEST_STORE=postgres)"
  pg_start=$SECONDS
  BERTH_TEST_STORE=postgres cargo test -p berth-engine --test all
  echo "== the engine suite on PostgreSQL took $((SECONDS - pg_start)) s"
fi
