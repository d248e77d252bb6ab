#!/usr/bin/env bash
# scripts/install.sh against a release directory served on localhost:
#
#   .ci/install-test.sh DIST   (DIST: what scripts/release-asset.sh wrote for this host)
#
# A good install runs; a wrong checksum, a truncated download and an unknown platform each
# refuse with one line and leave nothing installed; a --version that is not a vX.Y.Z tag
# refuses so before any request reaches the server; an unknown platform with cargo at hand
# falls back to `cargo install --locked icbench` (a stand-in cargo records the call).
set -euo pipefail
dist=$(cd "$1" && pwd -P)
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
install_sh="$ROOT/scripts/install.sh"
work=$(mktemp -d)
server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2> /dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

asset=$(cd "$dist" && ls icbench-*.tar.gz)
# Three releases: as built, with a wrong checksum, and with the asset cut in half.
mkdir -p "$work/www/good" "$work/www/badsum" "$work/www/truncated"
cp "$dist/$asset" "$dist/SHA256SUMS" "$work/www/good/"
cp "$dist/$asset" "$work/www/badsum/"
sed 's/^\(.\)/0\1/; s/^\(.\{64\}\)./\1/' "$dist/SHA256SUMS" > "$work/www/badsum/SHA256SUMS"
cmp -s "$dist/SHA256SUMS" "$work/www/badsum/SHA256SUMS" && { echo "the altered SHA256SUMS is unaltered" >&2; exit 1; }
size=$(wc -c < "$dist/$asset")
head -c $((size / 2)) "$dist/$asset" > "$work/www/truncated/$asset"
cp "$dist/SHA256SUMS" "$work/www/truncated/"

port_file="$work/port"
python3 - "$work/www" "$port_file" > "$work/server.log" 2>&1 <<'EOF' &
import functools, http.server, sys
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
import os; os.rename(sys.argv[2] + ".tmp", sys.argv[2])
server.serve_forever()
EOF
server_pid=$!
for _ in $(seq 100); do [ -f "$port_file" ] && break; sleep 0.1; done
[ -f "$port_file" ] || { echo "the local HTTP server did not start" >&2; cat "$work/server.log" >&2; exit 1; }
url="http://127.0.0.1:$(cat "$port_file")"

# PATH without cargo (the fallback must not hide a failure); sh, curl, tar, sha256sum remain.
plain_path=/usr/bin:/bin
run_install() { # NAME RELEASE [VAR=VALUE...]: installs into $work/NAME/bin; stderr in $work/NAME.err
    local name=$1 release=$2
    shift 2
    env PATH="$plain_path" HOME="$work/home" ICBENCH_RELEASE_URL="$url/$release" "$@" \
        sh "$install_sh" --to "$work/$name/bin" ${install_args[@]+"${install_args[@]}"} 2> "$work/$name.err"
}
install_args=()
refuses() { # NAME RELEASE WHAT [VAR=VALUE...]
    local name=$1 release=$2 what=$3
    shift 3
    if run_install "$name" "$release" "$@"; then
        echo "install.sh installed from a release with $what" >&2
        exit 1
    fi
    if [ "$(wc -l < "$work/$name.err")" -ne 1 ] || ! grep -q "nothing installed" "$work/$name.err"; then
        echo "install.sh did not refuse $what in one line:" >&2
        cat "$work/$name.err" >&2
        exit 1
    fi
    if [ -n "$(ls -A "$work/$name/bin" 2> /dev/null)" ]; then
        echo "install.sh left files after refusing $what: $(ls -A "$work/$name/bin")" >&2
        exit 1
    fi
    echo "install.sh refuses $what: $(cat "$work/$name.err")"
}

run_install good good || { cat "$work/good.err" >&2; exit 1; }
expected=$("$ROOT/target/release/icbench" --version)
[ "$("$work/good/bin/icbench" --version)" = "$expected" ] ||
    { echo "the installed icbench is not the one built" >&2; exit 1; }
[ "$(ls -A "$work/good/bin")" = icbench ] || { echo "install.sh left more than icbench" >&2; exit 1; }
echo "install.sh installs $asset from $url/good: $expected"

refuses badsum badsum "a wrong checksum"
refuses truncated truncated "a truncated download"
refuses unknown good "an unknown platform" ICBENCH_PLATFORM="Plan9 mips"

# A --version that is no vX.Y.Z tag is refused before any download: the server sees no
# request for it. A well-formed one goes on (here ICBENCH_RELEASE_URL says where from).
requests() { grep -c '"GET ' "$work/server.log" || true; }
before=$(requests)
i=0
for bad in notaversion v1.2 1.2.3 v1.2.3.4 v01.2.3 "" "v1.2.3 x"; do
    i=$((i + 1))
    install_args=(--version "$bad")
    refuses "version$i" good "--version '$bad'"
    grep -q "is not a release tag: tags are vX.Y.Z" "$work/version$i.err" ||
        { echo "install.sh refused --version '$bad' for another reason: $(cat "$work/version$i.err")" >&2; exit 1; }
done
[ "$(requests)" = "$before" ] ||
    { echo "a malformed --version reached the server ($before -> $(requests) requests)" >&2; exit 1; }
install_args=(--version v9.9.9)
run_install tagged good || { cat "$work/tagged.err" >&2; exit 1; }
[ "$("$work/tagged/bin/icbench" --version)" = "$expected" ] ||
    { echo "install.sh --version v9.9.9 did not install the release served" >&2; exit 1; }
echo "install.sh takes --version v9.9.9 and installs from $url/good"
install_args=()

# With cargo on PATH an unknown platform builds from the crate instead.
mkdir -p "$work/fake"
printf '#!/bin/sh\necho "$@" > "%s/cargo.args"\n' "$work" > "$work/fake/cargo"
chmod +x "$work/fake/cargo"
plain_path="$work/fake:/usr/bin:/bin" run_install fallback good ICBENCH_PLATFORM="Plan9 mips" ||
    { cat "$work/fallback.err" >&2; exit 1; }
[ "$(cat "$work/cargo.args")" = "install --locked --root $work/fallback icbench" ] ||
    { echo "the fallback ran: cargo $(cat "$work/cargo.args")" >&2; exit 1; }
echo "install.sh falls back to: cargo $(cat "$work/cargo.args")"
