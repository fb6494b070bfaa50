"""`sizing calc --gguf FILE`: a small GGUF written with gguf's own writer is sized from its
header exactly; a corrupt or missing file is one clear line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from assistant.cli import main as cli_main
from assistant.gguf_file import read_gguf
from tools.errors import ModelConfigError


def write_tiny_gguf(path: Path) -> int:
    """A 2-layer llama-shaped GGUF with F16 tensors; returns the tensor bytes."""
    import gguf

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("Tiny Llama")
    writer.add_block_count(2)
    writer.add_embedding_length(256)
    writer.add_feed_forward_length(512)
    writer.add_head_count(4)
    writer.add_head_count_kv(2)
    writer.add_key_length(64)
    writer.add_context_length(4096)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    writer.add_token_list([f"t{i}" for i in range(1000)])
    total = 0

    def tensor(name: str, rows: int, cols: int) -> None:
        nonlocal total
        data = np.zeros((rows, cols), dtype=np.float16)
        writer.add_tensor(name, data)
        total += data.nbytes

    tensor("token_embd.weight", 1000, 256)
    tensor("output.weight", 1000, 256)
    for i in range(2):
        tensor(f"blk.{i}.attn_q.weight", 256, 256)
        tensor(f"blk.{i}.attn_k.weight", 128, 256)
        tensor(f"blk.{i}.attn_v.weight", 128, 256)
        tensor(f"blk.{i}.attn_output.weight", 256, 256)
        tensor(f"blk.{i}.ffn_gate.weight", 512, 256)
        tensor(f"blk.{i}.ffn_up.weight", 512, 256)
        tensor(f"blk.{i}.ffn_down.weight", 256, 512)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return total


def test_header_gives_the_architecture_and_exact_bytes(tmp_path: Path) -> None:
    path = tmp_path / "tiny.gguf"
    total = write_tiny_gguf(path)
    header = read_gguf(str(path))
    assert header.config["num_hidden_layers"] == 2 and header.config["num_key_value_heads"] == 2
    assert header.config["vocab_size"] == 1000 and header.config["head_dim"] == 64
    assert header.weights.bytes == total and header.weights.token_embedding_bytes == 1000 * 256 * 2
    assert header.precision == "fp16" and header.name == "Tiny Llama"


def test_cli_sizes_the_file_as_llama_cpp(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    path = tmp_path / "tiny.gguf"
    total = write_tiny_gguf(path)
    assert cli_main(["calc", "--gguf", str(path), "--gpu", "rtx-3090", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["engine"] == "llamacpp" and data["precision"] == "fp16"
    assert data["weights_gb"] == pytest.approx(total / 1e9, abs=0.01)
    assert data["kv_bytes_per_token"] == 2 * 2 * 2 * 64 * 2  # 2 layers × K,V × 2 heads × 64 × fp16
    assert "GGUF file's header" in data["arithmetic"][0]


@pytest.mark.parametrize("content", [b"", b"GGUF\x03\x00\x00\x00garbage", b"not a gguf at all" * 10])
def test_a_corrupt_gguf_is_one_clear_line(
    tmp_path: Path, content: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "broken.gguf"
    path.write_bytes(content)
    with pytest.raises(ModelConfigError, match=r"broken\.gguf"):
        read_gguf(str(path))
    assert cli_main(["calc", "--gguf", str(path)]) == 2
    err = capsys.readouterr().err
    assert "broken.gguf" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_missing_gguf_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["calc", "--gguf", str(tmp_path / "nope.gguf")]) == 2
    assert "no such file" in capsys.readouterr().err
