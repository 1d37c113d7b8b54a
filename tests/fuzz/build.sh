#!/bin/sh
# Builds the libFuzzer harness of gil-convert's input parser: tests/fuzz/build.sh OUT
set -e
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-fuzz-convert}
convert_srcs=$(ls "$top"/src/convert/*.c)
clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-DHAVE_CONFIG_H -I"$top" -I. -I"$top/include" -I"$top/src/lib" -I"$top/src/convert" \
	$(pkg-config --cflags json-c) \
	"$top/tests/fuzz/fuzz-convert.c" $convert_srcs "$top/src/lib/rawread.c" \
	"$top/src/lib/rawfile.c" "$top/src/lib/util.c" \
	$(pkg-config --libs json-c) -o "$out"
