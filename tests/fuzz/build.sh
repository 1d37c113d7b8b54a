#!/bin/sh
# Builds the libFuzzer harness of gil-convert's input parser: tests/fuzz/build.sh OUT
# (its own compiler and sanitizers, so it compiles the converter's and the format's sources).
set -e
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${top_builddir:-$top} # config.h: configure's, in the build tree
out=${1:-fuzz-convert}
srcs=$(ls "$top"/src/convert/*.c "$top"/src/format/*.c "$top"/src/common/*.c)
clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-DHAVE_CONFIG_H -I"$build" -I"$top" -I. -I"$top/include" -I"$top/src" -I"$top/src/convert" \
	$(pkg-config --cflags json-c) \
	"$top/tests/fuzz/fuzz-convert.c" $srcs \
	$(pkg-config --libs json-c) -o "$out"
