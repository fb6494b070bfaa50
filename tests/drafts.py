"""Reading the sales draft's Markdown back in the tests, and a model config to size by."""

from __future__ import annotations

# The fields of Llama 3.1 8B's Hugging Face config.json that size it.
LLAMA_8B_CONFIG = {
    "_name_or_path": "my-org/llama-8b-finetune",
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}


def table_rows(draft: str) -> dict[str, str]:
    """First cell -> last cell of every row of the draft's Markdown table."""
    rows = {}
    for line in draft.splitlines():
        if line.startswith("| ") and not line.startswith("|---"):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            rows[cells[0].strip("*")] = cells[-1].strip("*")
    return rows
