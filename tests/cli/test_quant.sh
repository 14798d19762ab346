#!/usr/bin/env bash
# Quantized models end to end: `hearth model make` writes llama-quantize's mixes, `model info`
# lists their types, `generate` runs on each; a file with a type Hearth does not read is refused
# in one line naming the file, the tensor and the type. Usage: test_quant.sh PATH/TO/hearth
source "$(dirname "$0")/lib.sh"
hearth=$1

# The tiny preset's 288-wide rows are not whole 256-element super-blocks: as in llama-quantize,
# those tensors fall back (q4_K -> q5_0, q6_K -> q8_0, q2_K/q3_K -> iq4_nl) and only ffn_down
# (768 wide) holds K types. These counts are the ones llama.cpp's llama_model_quantize gives the
# same model's f32 file.
declare -A types=(
  [q4_k_m]="f32 13 q4_K 4 q5_0 35 q6_K 2 q8_0 3"
  [q2_k]="f32 13 iq4_nl 37 q3_K 6 q8_0 1"
  [q3_k_m]="f32 13 iq4_nl 25 q4_K 6 q5_0 10 q5_1 2 q8_0 1"
  [q5_k_m]="f32 13 q5_1 35 q5_K 4 q6_K 2 q8_0 3"
  [q6_k]="f32 13 q6_K 6 q8_0 38"
  [q4_0]="f32 13 q4_0 43 q8_0 1"
)
for mix in "${!types[@]}"; do
  f="$dir/tiny-$mix.gguf"
  "$hearth" model make --preset tiny --dtype "$mix" --seed 3 -o "$f" >/dev/null
  info=$("$hearth" model info "$f")
  grep -q "tensors        57: ${types[$mix]}, file type $mix" <<<"$info" || fail "$mix: model info types: $info"
  a=$("$hearth" generate -m "$f" -p "The kettle" -n 8 --temperature 0 2>/dev/null)
  b=$("$hearth" generate -m "$f" -p "The kettle" -n 8 --temperature 0 2>/dev/null)
  [ -n "$a" ] && [ "$a" = "$b" ] || fail "$mix: greedy generation empty or not deterministic: '$a' vs '$b'"
done
# llama.cpp's LLAMA_FTYPE number for the file type.
python3 - "$dir/tiny-q4_k_m.gguf" <<'EOF' || fail "general.file_type of a q4_k_m file is not 15"
import struct, sys
data = open(sys.argv[1], "rb").read()
key = b"general.file_type"
at = data.index(struct.pack("<Q", len(key)) + key) + 8 + len(key)
vtype, value = struct.unpack_from("<II", data, at)
sys.exit(0 if (vtype, value) == (4, 15) else 1)
EOF

# A GGUF whose only tensor is iq2_xxs (ggml type 16, 66 bytes per 256 elements).
python3 - "$dir/iq2.gguf" <<'EOF'
import struct, sys
name = b"output.weight"
head = b"GGUF" + struct.pack("<IQQ", 3, 1, 0)
info = struct.pack("<Q", len(name)) + name + struct.pack("<IQIQ", 1, 256, 16, 0)
body = head + info
body += b"\0" * (-len(body) % 32) + b"\0" * 66
open(sys.argv[1], "wb").write(body)
EOF
expect_one_line_error "iq2_xxs refused" "$dir/iq2.gguf: bad_tensor_type" "$hearth" model info "$dir/iq2.gguf"
expect_one_line_error "iq2_xxs named" "tensor 'output.weight' is iq2_xxs.*q4_K" "$hearth" generate -m "$dir/iq2.gguf" -p x
# As a CPU without AVX-512 runs it (HEARTH_CPU_MASK, cpu_features.hpp): the AVX2 dots, greedy and
# deterministic; a mask naming an unknown feature is refused before anything runs.
f="$dir/tiny-q4_k_m.gguf"
mask=avx512f,avx512_vnni,avx512_bf16
a=$(HEARTH_CPU_MASK=$mask "$hearth" generate -m "$f" -p "The kettle" -n 8 --temperature 0 2>/dev/null)
b=$(HEARTH_CPU_MASK=$mask "$hearth" generate -m "$f" -p "The kettle" -n 8 --temperature 0 2>/dev/null)
[ -n "$a" ] && [ "$a" = "$b" ] || fail "masked to AVX2: greedy generation empty or not deterministic: '$a' vs '$b'"
expect_one_line_error "unknown CPU feature masked" "HEARTH_CPU_MASK: unknown feature 'avx512_bf17'" \
  env HEARTH_CPU_MASK=avx512_bf17 "$hearth" model info "$f"
echo "quant: all checks passed"
