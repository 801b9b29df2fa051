#!/bin/sh
# model_import.sh - Hugging Face configs as models: 'catalog import' writes an
# overlay the catalog loads, with the parameter count of the catalog's own
# entry for the same architecture, and --model-config projects and searches
# the same as that entry (given its batch and sequence). The configs are
# written here from the published config.json files, trimmed to the keys
# that describe the architecture plus a few others (named at each).
# Runs from the repository root, as 'make check' does.
. tests/integration/sweep_common.inc
need_tools "model import"

C=$TMP/cfg
mkdir -p "$C"
# meta-llama/Llama-3.1-8B config.json
cat >"$C/llama3.1-8b.json" <<'JSON'
{"architectures": ["LlamaForCausalLM"], "attention_bias": false, "hidden_act": "silu",
 "hidden_size": 4096, "intermediate_size": 14336, "max_position_embeddings": 131072,
 "mlp_bias": false, "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32,
 "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
 "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                  "original_max_position_embeddings": 8192, "rope_type": "llama3"},
 "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
 "vocab_size": 128256}
JSON
# mistralai/Mixtral-8x7B-v0.1 config.json
cat >"$C/mixtral-8x7b.json" <<'JSON'
{"architectures": ["MixtralForCausalLM"], "hidden_act": "silu", "hidden_size": 4096,
 "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mixtral",
 "num_attention_heads": 32, "num_experts_per_tok": 2, "num_hidden_layers": 32,
 "num_key_value_heads": 8, "num_local_experts": 8, "rms_norm_eps": 1e-05,
 "rope_theta": 1000000.0, "sliding_window": null, "tie_word_embeddings": false,
 "vocab_size": 32000}
JSON
# deepseek-ai/DeepSeek-V3 config.json
cat >"$C/deepseek-v3.json" <<'JSON'
{"architectures": ["DeepseekV3ForCausalLM"], "first_k_dense_replace": 3, "hidden_size": 7168,
 "intermediate_size": 18432, "kv_lora_rank": 512, "max_position_embeddings": 163840,
 "model_type": "deepseek_v3", "moe_intermediate_size": 2048, "n_group": 8,
 "n_routed_experts": 256, "n_shared_experts": 1, "num_attention_heads": 128,
 "num_experts_per_tok": 8, "num_hidden_layers": 61, "num_key_value_heads": 128,
 "num_nextn_predict_layers": 1, "q_lora_rank": 1536, "qk_nope_head_dim": 128,
 "qk_rope_head_dim": 64, "tie_word_embeddings": false, "topk_group": 4, "v_head_dim": 128,
 "vocab_size": 129280}
JSON
# openai-community/gpt2-xl config.json
cat >"$C/gpt2-xl.json" <<'JSON'
{"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
 "n_ctx": 1024, "n_embd": 1600, "n_head": 25, "n_layer": 48, "n_positions": 1024,
 "vocab_size": 50257}
JSON
# Qwen/Qwen2-7B config.json (no catalog entry: checked by its published 7.62B; its
# QKV biases, 0.13M parameters, are not modelled)
cat >"$C/qwen2-7b.json" <<'JSON'
{"architectures": ["Qwen2ForCausalLM"], "hidden_size": 3584, "intermediate_size": 18944,
 "max_position_embeddings": 131072, "model_type": "qwen2", "num_attention_heads": 28,
 "num_hidden_layers": 28, "num_key_value_heads": 4, "tie_word_embeddings": false,
 "vocab_size": 152064}
JSON
# EleutherAI/pythia-6.9b config.json (GPT-NeoX; published 6.86B with untied embeddings)
cat >"$C/pythia-6.9b.json" <<'JSON'
{"architectures": ["GPTNeoXForCausalLM"], "hidden_size": 4096, "intermediate_size": 16384,
 "max_position_embeddings": 2048, "model_type": "gpt_neox", "num_attention_heads": 32,
 "num_hidden_layers": 32, "rotary_pct": 0.25, "tie_word_embeddings": false,
 "vocab_size": 50432}
JSON

params() { # params NAME CATALOG...: the params column of 'list models --csv'
    n=$1; shift
    $BIN list models --csv "$@" | awk -F, -v n="$n" '$1 == n { print $NF }'
}
for pair in llama3.1-8b:llama3-8b mixtral-8x7b:mixtral-8x7b deepseek-v3:deepseek-v3 gpt2-xl:gpt2-xl; do
    f=${pair%%:*} ref=${pair#*:}
    $BIN catalog import "$C/$f.json" --name "hf-$f" >"$TMP/$f.yaml" 2>"$TMP/$f.err"; rc=$?
    check "catalog import $f.json exits 0" [ $rc -eq 0 ]
    [ $rc -eq 0 ] || sed 's/^/  /' "$TMP/$f.err"
    got=$(params "hf-$f" --catalog "$TMP/$f.yaml") want=$(params "$ref")
    check "hf-$f loads as an overlay with $ref's parameters ($got vs $want)" [ -n "$got" -a "$got" = "$want" ]
done
for pair in qwen2-7b:7.62 pythia-6.9b:6.86; do
    f=${pair%%:*} b=${pair#*:}
    $BIN catalog import "$C/$f.json" --name "$f" >"$TMP/$f.yaml"
    got=$(params "$f" --catalog "$TMP/$f.yaml")
    check "$f: its published $b B parameters ($got)" \
        awk -v p="$got" -v b="$b" 'BEGIN { exit !(p != "" && (p / 1e9 - b) ^ 2 < 0.005 ^ 2) }'
done 2>/dev/null
$BIN catalog import "$C/qwen2-7b.json" | grep -q '^  - name: "qwen2"$'
check "without --name and _name_or_path the entry is named by model_type" [ $? -eq 0 ]

# --model-config: the same projection and search as the catalog entry
a=$($BIN project --model-config "$C/mixtral-8x7b.json" --hw h100-sxm --devices 64 --tp 2 --pp 1 --ep 8 \
    --gbs 256 --seq 4096 --json | sed -n 's/.*"t_iter": \([0-9.e+-]*\).*/\1/p' | head -1)
b=$($BIN project --model mixtral-8x7b --hw h100-sxm --devices 64 --tp 2 --pp 1 --ep 8 --json |
    sed -n 's/.*"t_iter": \([0-9.e+-]*\).*/\1/p' | head -1)
check "project --model-config mixtral equals project --model mixtral-8x7b ($a vs $b)" [ -n "$a" -a "$a" = "$b" ]
$BIN search --model-config "$C/llama3.1-8b.json" --hw h100-sxm --devices 64 --gbs 2048 --seq 8192 \
    --top 1 --csv | tail -1 | cut -d, -f2- >"$TMP/s1"
$BIN search --model llama3-8b --hw h100-sxm --devices 64 --top 1 --csv | tail -1 | cut -d, -f2- >"$TMP/s2"
check "search --model-config llama3.1-8b finds llama3-8b's best plan" cmp -s "$TMP/s1" "$TMP/s2"
$BIN project --model-config "$C/llama3.1-8b.json" --hw h100-sxm --devices 8 --tp 8 >/dev/null 2>"$TMP/e.err"
check "a config gives no batch: project asks for --gbs" grep -q -- "--gbs" "$TMP/e.err"

# errors name the file and the key
# fails_with WHAT PATTERN CMD...: CMD exits 1 with PATTERN (grep -E) on stderr
fails_with() {
    what=$1 pat=$2
    shift 2
    "$@" >"$TMP/e.out" 2>"$TMP/e.err"; rc=$?
    if [ $rc -eq 1 ] && grep -qE -- "$pat" "$TMP/e.err"; then
        pass "$what"
    else
        fail "$what (exit $rc: $(head -c 300 "$TMP/e.err"))"
    fi
}
printf '{"model_type": "llama", "hidden_size": 4096}\n' >"$C/bad.json"
fails_with "a config without num_hidden_layers: exit 1 naming the key" \
    "bad.json: num_hidden_layers: missing" $BIN catalog import "$C/bad.json"
printf '{"model_type": "t5"}\n' >"$C/t5.json"
fails_with "an unsupported model_type: exit 1 listing the supported ones" \
    "'t5' is not supported \(expected llama" $BIN catalog import "$C/t5.json"
printf '{"model_type": ' >"$C/trunc.json"
fails_with "a broken JSON file: exit 1 with its line" "trunc.json:1:" $BIN catalog import "$C/trunc.json"

# only regular files within the size limit: a FIFO would block the read
# forever (timeout: a regression fails here instead of hanging the suite),
# a directory is no config, and a large file is refused before jansson
# builds a tree many times its size
mkfifo "$C/fifo.json"
fails_with "catalog import of a FIFO: exit 1 at once, 'not a regular file'" \
    "fifo.json: not a regular file" timeout 10 $BIN catalog import "$C/fifo.json"
fails_with "project --model-config of a FIFO: exit 1 at once" "fifo.json: not a regular file" \
    timeout 10 $BIN project --model-config "$C/fifo.json" --hw h100-sxm --devices 8 --gbs 8 --seq 2048
fails_with "catalog import of a directory: exit 1, 'not a regular file'" "cfg: not a regular file" \
    $BIN catalog import "$C"
# the Llama config padded with blanks to one byte past 1 MiB: valid JSON, too large
{ cat "$C/llama3.1-8b.json"; head -c $((1048577 - $(wc -c <"$C/llama3.1-8b.json"))) /dev/zero | tr '\0' ' '; } \
    >"$C/big.json"
fails_with "a config over 1 MiB: exit 1 naming the limit" \
    "big.json: larger than 1 MiB \(the limit for Hugging Face configs\)" $BIN catalog import "$C/big.json"

# a zero or negative size is an error naming the key, never a default: 0
# intermediate_size once became 4 x hidden, 0 num_experts_per_tok one expert
# and 0 num_key_value_heads the query heads. set_key FILE KEY VALUE: FILE
# with KEY's value replaced (or KEY added first); the values here are numbers
set_key() {
    if grep -q "\"$2\":" "$1"; then
        sed "s/\"$2\": [^,}]*/\"$2\": $3/" "$1"
    else
        sed "1s/^{/{\"$2\": $3, /" "$1"
    fi
}
for case in llama3.1-8b:intermediate_size:0 llama3.1-8b:num_key_value_heads:0 \
    llama3.1-8b:hidden_size:0 llama3.1-8b:num_attention_heads:-32 llama3.1-8b:vocab_size:0 \
    mixtral-8x7b:num_experts_per_tok:0 mixtral-8x7b:num_local_experts:0 \
    deepseek-v3:moe_intermediate_size:0 deepseek-v3:q_lora_rank:0 deepseek-v3:topk_group:0 \
    gpt2-xl:n_inner:0 gpt2-xl:n_positions:0 pythia-6.9b:num_hidden_layers:0; do
    f=${case%%:*} kv=${case#*:}
    k=${kv%%:*} v=${kv#*:}
    set_key "$C/$f.json" "$k" "$v" >"$C/zero.json"
    fails_with "$f with $k $v: exit 1 naming $k" "zero.json: $k: expected a positive integer \(got $v\)" \
        $BIN catalog import "$C/zero.json"
done
set_key "$C/llama3.1-8b.json" tie_word_embeddings 1 >"$C/tie.json"
fails_with "tie_word_embeddings 1: exit 1 (not the default, untied)" \
    "tie.json: tie_word_embeddings: expected true or false" $BIN catalog import "$C/tie.json"

# the entry's name is one the catalog loads: the last non-empty component of
# _name_or_path (split at '/' and '\'; a trailing '/' once gave name ""),
# each run of characters a catalog name does not take as one '-' (a space
# was written as it was), '.' and '..' passed over, then model_type.
# names_as OWN NAME: the config with _name_or_path OWN (JSON-escaped)
# imports as NAME and loads as an overlay
with_own() { printf '{"_name_or_path": "%s", ' "$1"; sed '1s/^{//' "$C/llama3.1-8b.json"; }
names_as() {
    with_own "$1" >"$C/own.json"
    $BIN catalog import "$C/own.json" >"$TMP/own.yaml" 2>"$TMP/e.err"; rc=$?
    got=$($BIN list models --csv --catalog "$TMP/own.yaml" 2>>"$TMP/e.err" | awk -F, -v n="$2" '$1 == n { print $1 }')
    check "_name_or_path '$1' imports as '$2', an entry the catalog loads (exit $rc)" \
        [ $rc -eq 0 -a "$got" = "$2" ]
    [ -n "$got" ] || sed 's/^/  /' "$TMP/e.err"
}
names_as "meta-llama/Llama-3.1-8B/" Llama-3.1-8B
names_as "/home/me/my models/Llama 3.1 8B (base)" Llama-3.1-8B-base
names_as "./" llama
names_as "/ckpt/run7/.." run7
names_as 'C:\\models\\llama 8b\\' llama-8b
names_as 'org/\"quoted\"' quoted
fails_with "--name with a space: exit 1 naming --name and the rule" \
    "--name 'my model': a catalog name may hold only letters, digits, '-', '_', '.'" \
    $BIN catalog import "$C/llama3.1-8b.json" --name "my model"
fails_with "--name '': exit 1" "--name '': a catalog name is 1 to 47 characters" \
    $BIN catalog import "$C/llama3.1-8b.json" --name ""
with_own "org/a-model-name-that-is-much-longer-than-the-catalog-allows" >"$C/long.json"
fails_with "a _name_or_path too long for a name: exit 1 naming the key, suggesting --name" \
    "long.json: _name_or_path: 'a-model-name-that-is-much-longer-than-the-catalog-allows' is longer than 47 characters as a name \(give one with --name\)" \
    $BIN catalog import "$C/long.json"

# head_dim: Mistral-NeMo-12B's heads are 128 wide, not hidden / heads = 160
# (mistralai/Mistral-Nemo-Base-2407 config.json). By hand, untied:
#   attention: q 5120 x 32*128 + k, v 5120 x 8*128 each + o 4096 x 5120
#              = 20,971,520 + 2 x 5,242,880 + 20,971,520 = 52,428,800
#   MLP:       3 x 5120 x 14336 = 220,200,960; two RMSNorms 10,240
#   40 blocks: 40 x 272,640,000 = 10,905,600,000
#   embedding and head 2 x 131072 x 5120 = 1,342,177,280; final norm 5120
#   total 12,247,782,400: the published 12.25B (with 160-wide heads: 12.77B)
# and its KV cache 2 x 8 x 128 x 40 layers x 2 bytes = 163,840 bytes a token.
cat >"$C/mistral-nemo.json" <<'JSON'
{"architectures": ["MistralForCausalLM"], "head_dim": 128, "hidden_act": "silu",
 "hidden_size": 5120, "intermediate_size": 14336, "max_position_embeddings": 1024000,
 "model_type": "mistral", "num_attention_heads": 32, "num_hidden_layers": 40,
 "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0,
 "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
 "vocab_size": 131072}
JSON
$BIN catalog import "$C/mistral-nemo.json" --name nemo >"$TMP/nemo.yaml"
got=$(params nemo --catalog "$TMP/nemo.yaml")
check "Mistral-NeMo-12B with head_dim 128: 12,247,782,400 parameters ($got)" [ "$got" = 12247782400 ]
kv=$($BIN serve --catalog "$TMP/nemo.yaml" --model nemo --hw h100-sxm --isl 100 --osl 100 --json |
    sed -n 's/.*"kv_bytes_token": \([0-9.]*\),*/\1/p')
check "its KV cache: 163,840 bytes a token in bf16 ($kv)" [ "$kv" = 163840.0 ]
set_key "$C/mistral-nemo.json" head_dim 160 >"$C/nemo160.json"
$BIN catalog import "$C/nemo160.json" --name nemo160 >"$TMP/nemo160.yaml"
check "head_dim = hidden / heads is the default: no head_dim in the entry, 12.77B" \
    sh -c "! grep -q head_dim '$TMP/nemo160.yaml' && [ '$(params nemo160 --catalog "$TMP/nemo160.yaml")' = 12772070400 ]"
a=$($BIN project --model-config "$C/mistral-nemo.json" --hw h100-sxm --devices 64 --tp 4 --pp 2 \
    --gbs 256 --seq 4096 --json | sed -n 's/.*"t_iter": \([0-9.e+-]*\).*/\1/p' | head -1)
b=$($BIN project --catalog "$TMP/nemo.yaml" --model nemo --hw h100-sxm --devices 64 --tp 4 --pp 2 \
    --gbs 256 --seq 4096 --json | sed -n 's/.*"t_iter": \([0-9.e+-]*\).*/\1/p' | head -1)
check "project --model-config and the imported entry agree with head_dim ($a vs $b)" [ -n "$a" -a "$a" = "$b" ]
set_key "$C/mistral-nemo.json" head_dim 0 >"$C/zero.json"
fails_with "head_dim 0: exit 1 naming it" "zero.json: head_dim: expected a positive integer \(got 0\)" \
    $BIN catalog import "$C/zero.json"

# the entry quotes the config's path: a newline, a tab or a byte that is not
# UTF-8 (Latin-1 e-acute) in a file name is escaped, not written into the
# YAML (where the newline ended the comment and the byte is no character)
odd="$C/odd
name	\"q\"$(printf '\351').json"
cp "$C/llama3.1-8b.json" "$odd"
$BIN catalog import "$odd" --name odd >"$TMP/odd.yaml"; rc=$?
got=$(params odd --catalog "$TMP/odd.yaml")
check "a config whose file name holds a newline, a tab, quotes and a Latin-1 byte: the overlay loads (exit $rc)" \
    [ $rc -eq 0 -a "$got" = 8030261248 ]
