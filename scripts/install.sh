#!/bin/sh
# Installs the icbench binary of a release:
#
#   curl -sSfL https://github.com/icbench/icbench/releases/latest/download/install.sh | sh
#   sh install.sh [--to DIR] [--version vX.Y.Z]
#
# Picks the asset of this platform (Linux or macOS, x86_64 or arm64), checks it against the
# release's SHA256SUMS, and puts `icbench` in DIR (default ~/.local/bin, or $ICBENCH_INSTALL_DIR).
# Where no asset fits the platform it runs `cargo install --locked icbench` instead, if cargo
# is there. On any failure it says why in one line and installs nothing.
#
# ICBENCH_RELEASE_URL: where the release's assets are (default: the GitHub release of
# --version, or the latest). ICBENCH_PLATFORM: "OS ARCH" as uname says them, to override
# the detection (tests use both).
set -eu

repository="https://github.com/icbench/icbench"
to="${ICBENCH_INSTALL_DIR:-${HOME:-}/.local/bin}"
version=""
version_given=false

fail() {
    echo "icbench install: $*; nothing installed" >&2
    exit 1
}

while [ "$#" -gt 0 ]; do
    case "$1" in
        --to) [ "$#" -ge 2 ] || fail "--to needs a directory"; to=$2; shift 2 ;;
        --to=*) to=${1#--to=}; shift ;;
        --version) [ "$#" -ge 2 ] || fail "--version needs a tag such as v0.1.0"; version=$2; version_given=true; shift 2 ;;
        --version=*) version=${1#--version=}; version_given=true; shift ;;
        -h|--help) sed -n '2,15p' "$0" 2>/dev/null || true; exit 0 ;;
        *) fail "unknown argument '$1' (accepted: --to DIR, --version vX.Y.Z)" ;;
    esac
done
[ -n "$to" ] || fail "no install directory: set HOME, ICBENCH_INSTALL_DIR or --to"
# A release tag is vX.Y.Z: anything else names no release, and is refused before any download
# (shown with anything but letters, digits and . + - as ?, to stay one line).
if [ "$version_given" = true ]; then
    case "$version" in
        "" | *[!0-9.v]*) tag_ok=false ;;
        *) printf '%s\n' "$version" | grep -Eq '^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$' &&
            tag_ok=true || tag_ok=false ;;
    esac
    [ "$tag_ok" = true ] ||
        fail "--version '$(printf '%s' "$version" | tr -c 'A-Za-z0-9.+-' '?')' is not a release tag: tags are vX.Y.Z, such as v0.1.0"
fi

if [ -n "${ICBENCH_RELEASE_URL:-}" ]; then
    base=${ICBENCH_RELEASE_URL%/}
elif [ -n "$version" ]; then
    base="$repository/releases/download/$version"
else
    base="$repository/releases/latest/download"
fi

platform=${ICBENCH_PLATFORM:-"$(uname -s) $(uname -m)"}
case "$platform" in
    "Linux x86_64" | "Linux amd64") target=x86_64-unknown-linux-gnu ;;
    "Linux aarch64" | "Linux arm64") target=aarch64-unknown-linux-gnu ;;
    "Darwin x86_64") target=x86_64-apple-darwin ;;
    "Darwin arm64" | "Darwin aarch64") target=aarch64-apple-darwin ;;
    *) target="" ;;
esac

if [ -z "$target" ]; then
    if command -v cargo > /dev/null 2>&1; then
        [ "$(basename "$to")" = bin ] ||
            fail "no release binary for $platform, and cargo install puts icbench in ROOT/bin: give --to a directory named bin"
        echo "icbench install: no release binary for $platform; building it with cargo install --locked icbench" >&2
        set -- install --locked --root "$(dirname "$to")" icbench
        if [ -n "$version" ]; then set -- "$@" --version "${version#v}"; fi
        exec cargo "$@"
    fi
    fail "no release binary for $platform and no cargo to build one (install Rust from rustup.rs, then cargo install --locked icbench)"
fi

fetch() { # URL FILE
    if command -v curl > /dev/null 2>&1; then
        curl -sSfL --retry 2 -o "$2" "$1" 2> /dev/null
    elif command -v wget > /dev/null 2>&1; then
        wget -q -O "$2" "$1"
    else
        fail "neither curl nor wget is installed"
    fi
}
sha256() {
    if command -v sha256sum > /dev/null 2>&1; then
        sha256sum "$1" | cut -d' ' -f1
    elif command -v shasum > /dev/null 2>&1; then
        shasum -a 256 "$1" | cut -d' ' -f1
    else
        fail "neither sha256sum nor shasum is installed to check the download"
    fi
}

asset="icbench-$target.tar.gz"
work=$(mktemp -d 2> /dev/null || mktemp -d -t icbench)
trap 'rm -rf "$work"' EXIT
# An interrupt ends the script (and so runs the EXIT trap) instead of carrying on.
trap 'exit 130' INT TERM

fetch "$base/SHA256SUMS" "$work/SHA256SUMS" || fail "cannot download $base/SHA256SUMS"
expected=$(awk -v f="$asset" '$2 == f || $2 == "*" f { print $1 }' "$work/SHA256SUMS")
[ -n "$expected" ] || fail "$base/SHA256SUMS has no line for $asset"
fetch "$base/$asset" "$work/$asset" || fail "cannot download $base/$asset"
actual=$(sha256 "$work/$asset")
[ "$actual" = "$expected" ] ||
    fail "$asset does not match its SHA256SUMS line (sha256 $actual, expected $expected): a truncated or altered download"

mkdir "$work/x"
tar -xzf "$work/$asset" -C "$work/x" 2> /dev/null || fail "$asset is not a readable tar.gz"
binary="$work/x/icbench-$target/icbench"
[ -f "$binary" ] || fail "$asset has no icbench-$target/icbench"
chmod +x "$binary"
"$binary" --version > /dev/null 2>&1 || fail "the downloaded icbench does not run on this machine ($platform)"

mkdir -p "$to" 2> /dev/null || fail "cannot create $to"
# Into the directory under a temporary name, then renamed: never half a binary in place.
cp "$binary" "$to/.icbench.install.$$" 2> /dev/null || fail "cannot write into $to"
mv -f "$to/.icbench.install.$$" "$to/icbench" || { rm -f "$to/.icbench.install.$$"; fail "cannot write $to/icbench"; }
echo "icbench install: $("$to/icbench" --version) in $to/icbench" >&2
case ":${PATH:-}:" in
    *":$to:"*) ;;
    *) echo "icbench install: $to is not on PATH; add it, or run $to/icbench" >&2 ;;
esac
