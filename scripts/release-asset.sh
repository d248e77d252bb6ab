#!/usr/bin/env bash
# Builds the icbench release asset for one target and adds its line to SHA256SUMS:
#
#   scripts/release-asset.sh TARGET OUT_DIR
#
# writes OUT_DIR/icbench-TARGET.tar.gz (one directory icbench-TARGET/ holding the binary
# and README.md: the layout Cargo.toml's [package.metadata.binstall] names) and appends
# "SHA256  icbench-TARGET.tar.gz" to OUT_DIR/SHA256SUMS, replacing an older line for it.
# The release workflow runs it on each platform's runner; .ci/run runs it for the host, so
# the path a release takes is tested on every change. For the host target it builds into
# target/release, which the tests already built (no second compile); for another target
# into target/TARGET/release.
set -euo pipefail

if [ "$#" -ne 2 ]; then
    echo "usage: scripts/release-asset.sh TARGET OUT_DIR (e.g. x86_64-unknown-linux-gnu dist)" >&2
    exit 2
fi
target=$1
out=$2
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$ROOT"

case "$target" in
    *windows*) echo "release-asset: Windows is not a release target" >&2; exit 2 ;;
esac
host=$(rustc -vV | sed -n 's/^host: //p')
if [ "$target" = "$host" ]; then
    cargo build --release --locked --bin icbench
    built=target/release/icbench
else
    if command -v rustup > /dev/null; then rustup target add "$target"; fi
    cargo build --release --locked --bin icbench --target "$target"
    built="target/$target/release/icbench"
fi

name="icbench-$target"
mkdir -p "$out"
out="$(cd "$out" && pwd -P)"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir "$stage/$name"
cp "$built" "$stage/$name/icbench"
cp README.md "$stage/$name/README.md"
# A reproducible archive: fixed owner, order and times, so the same binary gives the same
# checksum (GNU tar here and on the Linux runners; macOS runners use their bsdtar).
if tar --version 2>/dev/null | grep -q 'GNU tar'; then
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime='@0' \
        -C "$stage" -cf - "$name" | gzip -n > "$out/$name.tar.gz.tmp"
else
    tar -C "$stage" -cf - "$name" | gzip -n > "$out/$name.tar.gz.tmp"
fi
mv "$out/$name.tar.gz.tmp" "$out/$name.tar.gz"

if command -v sha256sum > /dev/null; then
    sum=$(sha256sum "$out/$name.tar.gz" | cut -d' ' -f1)
else
    sum=$(shasum -a 256 "$out/$name.tar.gz" | cut -d' ' -f1)
fi
sums="$out/SHA256SUMS"
touch "$sums"
grep -v "  $name.tar.gz\$" "$sums" > "$sums.tmp" || true
echo "$sum  $name.tar.gz" >> "$sums.tmp"
sort -k2 "$sums.tmp" > "$sums"
rm "$sums.tmp"
echo "release-asset: $out/$name.tar.gz ($sum)" >&2
