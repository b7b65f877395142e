#!/bin/bash -eu
# ClusterFuzzLite / OSS-Fuzz build: the same CMake fuzz build as the local
# `cmake --preset fuzz` (fuzz/README.md), with the compiler, sanitizer and
# engine flags the infrastructure passes in $CC, $CXX, $CFLAGS, $CXXFLAGS and
# $LIB_FUZZING_ENGINE. Writes every *_fuzz target to $OUT with its seed corpus
# (<target>_seed_corpus.zip, made by make_seeds from corpora/seeds/).
# ATTNCHECK_CFL_ADAPTER picks the adapter the law targets check (default eigen).
build=$WORK/attncheck-build
cmake -S "$SRC/attncheck" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" \
  -DCMAKE_C_FLAGS="$CFLAGS" -DCMAKE_CXX_FLAGS="$CXXFLAGS" \
  -DATTNCHECK_FUZZ=ON -DATTNCHECK_FUZZ_ENGINE="$LIB_FUZZING_ENGINE" \
  -DATTNCHECK_FUZZ_DEFAULT_ADAPTER="${ATTNCHECK_CFL_ADAPTER:-eigen}" \
  -DATTNCHECK_NO_GGML=ON
cmake --build "$build" --target fuzz-all

seeds=$WORK/attncheck-seeds
rm -rf "$seeds"
parsers=()
for src in "$SRC"/attncheck/fuzz/*_fuzz.cc; do parsers+=(--parser "$(basename "$src" _fuzz.cc)"); done
# Seeds are a head start, not a requirement: a build whose make_seeds cannot
# run (e.g. a coverage build) still ships its targets.
if (cd "$SRC/attncheck" && "$build/fuzz/make_seeds" --out "$seeds" "${parsers[@]}"); then
  have_seeds=1
else
  echo "build.sh: make_seeds failed; targets ship without seed corpora" >&2
  have_seeds=0
fi
for target in "$build"/fuzz/*_fuzz; do
  name=$(basename "$target")
  cp "$target" "$OUT/"
  stem=${name%_fuzz}
  if [[ -f $SRC/attncheck/fuzz/$stem.dict ]]; then cp "$SRC/attncheck/fuzz/$stem.dict" "$OUT/$name.dict"; fi
  if [[ $have_seeds == 1 && -d $seeds/$stem ]]; then
    (cd "$seeds/$stem" && zip -q -r "$OUT/${name}_seed_corpus.zip" .)
  fi
done
