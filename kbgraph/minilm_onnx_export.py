"""The ONNX export of the bundled MiniLM model: where it is kept in the cache and how PyTorch writes
it, once, from the package's own weights (no download). The ONNX runtime embedder
(:class:`kbgraph.embedders.OnnxMiniLMEmbedder`) loads what this writes."""

from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path
from typing import Any

from kbgraph.core.ids import text_hash

__all__ = ["MINILM_NAME", "ONNX_EXPORT_VERSION", "export_minilm_onnx", "onnx_export_path"]

#: The name both MiniLM runtimes answer to: the same weights give the same vectors (cosine
#: agreement ≥ 0.99999 over the corpus texts, docs/performance.md), so they share one embedding cache.
MINILM_NAME = "all-MiniLM-L6-v2"
#: Bump when the exported graph changes, so that a cached export of an older kind is not reused.
ONNX_EXPORT_VERSION = 1


def onnx_export_path(model_path: Path, cache_dir: Path, quantised: bool = False) -> Path:
    """Where the ONNX export of the model at ``model_path`` is kept: in the cache, named by the
    model file's path, size and time, so a different or updated model gets an export of its own."""
    weights = model_path / "model.safetensors"
    if not weights.exists():
        weights = model_path / "pytorch_model.bin"
    stat = weights.stat() if weights.exists() else None
    key = text_hash(f"{ONNX_EXPORT_VERSION} {weights.resolve()} {stat.st_size if stat else 0} "
                    f"{stat.st_mtime_ns if stat else 0}")[:16]
    return cache_dir / "models" / f"{MINILM_NAME}-{key}{'-int8' if quantised else ''}.onnx"


def export_minilm_onnx(model_path: Path, target: Path) -> Path:
    """Exports the transformer of the MiniLM model at ``model_path`` to ONNX at ``target`` (token
    ids, attention mask and token types in; the last hidden states out; batch and length free),
    with PyTorch's TorchScript exporter. Written to a temporary file and renamed, so that processes
    exporting at the same time each see a whole file."""
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as transformers_logging

    transformers_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    model = AutoModel.from_pretrained(str(model_path)).eval()

    class HiddenStates(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.partial")
    ids = torch.ones((1, 8), dtype=torch.long)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tracer's notes on shapes, not the user's concern
            torch.onnx.export(
                HiddenStates(model), (ids, ids, torch.zeros_like(ids)), str(partial), dynamo=False,
                input_names=names, output_names=["last_hidden_state"], opset_version=17,
                dynamic_axes={name: {0: "batch", 1: "tokens"} for name in [*names, "last_hidden_state"]},
            )
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target
