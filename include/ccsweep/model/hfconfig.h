/* hfconfig.h - a model from a Hugging Face config.json: the architectures
 * whose configs name every figure ccsweep needs (Llama, Mistral, Qwen2 dense;
 * Mixtral and DeepSeek-V3 mixtures of experts; GPT-2 and GPT-NeoX). Only
 * this module reads those files. */
#ifndef CCSWEEP_HFCONFIG_H
#define CCSWEEP_HFCONFIG_H

#include "ccsweep/model/model.h"

#include <stdio.h>

/* The model_type values understood, comma-separated, for messages. */
#define HFCONFIG_TYPES "llama, mistral, qwen2, mixtral, deepseek_v3, gpt2, gpt_neox"

/* Read the config at path into out, named name (a catalog name,
 * ccs_name_ok; NULL: one made from the file's "_name_or_path", its last
 * component as a catalog name takes it, "meta-llama/Llama-3.1-8B/" as
 * "Llama-3.1-8B", "/ckpt/My Model" as "My-Model"; else its model_type).
 * A name made longer than a catalog name is an error naming
 * "_name_or_path". The published training
 * sequence and batch are not in a config: seq and gbs are left 0. What the
 * architecture implies and the config does not say is set as its reference
 * implementation does (GPT-2: biases, LayerNorm, tied head, 4h FFN; Llama
 * family: SwiGLU, RMSNorm, no biases); a key given is never replaced by
 * its default: a size of 0 or less, a count below 0 or a boolean that is
 * not true or false is an error. Returns CCS_OK, or an error with err naming
 * the file and the key ("config.json: num_hidden_layers: missing",
 * "config.json: intermediate_size: expected a positive integer (got 0)").
 * The model passes model_validate. */
int hfconfig_load(const char *path, const char *name, ccs_model *out, ccs_err *err);

/* Write m (as hfconfig_load made it from path) to f as a catalog overlay with
 * one models entry, which catalog_load_models reads back as m: every field,
 * seq and gbs left out. path is quoted in a comment and the entry's source,
 * whatever bytes it holds. */
void hfconfig_write_entry(FILE *f, const ccs_model *m, const char *path);

#endif
