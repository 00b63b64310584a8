"""MiniLM rewritten once, before its session is built and saved, to compute on its int8 weights.

The shipped model stores each weight matrix as int8 with one scale per row or column, and
dequantizes it (``Cast``, ``Mul``) before use: onnxruntime folds that into float32 copies. The
rewrite keeps the token table int8 (a text's rows are gathered, then scaled: 35 MB less to map).

With ``products`` (RESEARCH_MCP_INTEGER_MINILM=1) each weight product is done by
``DynamicQuantizeMatMul`` on the int8 weights (activations quantized to uint8 per call, integer
products, the column scales applied after), and the NaN guards after each softmax go (they zero
padded rows; one text a call has none): a passage of git's documentation in 20 ms of CPU instead
of 46, a short sentence 3.3 ms instead of
5.4, but each vector moves (cosine to the float one min 0.990, mean 0.995; ``python -m
bench.embedders --agreement FOLDER``), which the ranker's weights, fitted on float vectors, felt:
python3-doc's dev selection fell 0.35 -> 0.24 and HotpotQA's dev supporting recall 0.875 -> 0.828.
Off until the ranker is refitted on them. Activations are quantized over a call's whole input, so
:class:`~research_mcp.llm.embeddings.MiniLMEmbedder` then runs one text a call, keeping every
vector its text's own.

It needs the ``onnx`` package to edit the graph (only here, once per cache folder); without it, or
for a graph of another shape, :func:`rewrite` says no and the shipped graph is used as before.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["VERSION", "available", "rewrite"]

logger = logging.getLogger(__name__)

#: Part of the saved model's folder name: a change to the rewrite builds the saved model again.
VERSION = "1"
_MS = "com.microsoft"


def products_on_int8() -> bool:
    """Whether MiniLM is rewritten to compute on int8 (RESEARCH_MCP_INTEGER_MINILM=1). Off by
    default: the vectors move (cosine >= 0.99) and the ranker's weights were fitted on the float
    ones; with them python3-doc's dev selection fell 0.35 -> 0.24 (2 of 17 questions) until a refit."""
    return os.environ.get("RESEARCH_MCP_INTEGER_MINILM", "") == "1"


def available() -> bool:
    """Whether the graph can be rewritten here (the ``onnx`` package is installed)."""
    import importlib.util

    return importlib.util.find_spec("onnx") is not None


def rewrite(model_path: Path, target: Path, *, products: bool = True) -> bool:
    """Write the integer form of the model at `model_path` to `target`; False (nothing written
    that matters) when ``onnx`` is missing or the graph is not the dequantize-then-multiply kind."""
    try:
        import onnx
    except ImportError:
        return False
    try:
        model = onnx.load(str(model_path))
        if not _rewrite_graph(model.graph, products=products):
            logger.info("the embedding model %s has no int8 weights to compute on; kept as is", model_path)
            return False
        if not any(opset.domain == _MS for opset in model.opset_import):
            model.opset_import.append(onnx.helper.make_opsetid(_MS, 1))
        onnx.save(model, str(target))
    except Exception:  # a graph this rewrite does not know: the shipped one serves
        logger.warning("the embedding model could not be rewritten to integer products", exc_info=True)
        return False
    return True


def _rewrite_graph(graph: Any, *, products: bool) -> bool:
    from onnx import helper
    from onnx import numpy_helper as nh

    initializers = {i.name: i for i in graph.initializer}
    producer = {output: node for node in graph.node for output in node.output}
    nodes: list[Any] = []
    added: list[Any] = []
    changed = 0
    for node in graph.node:
        dequantized = (
            _dequantized(node.input[1], producer, initializers) if node.op_type == "MatMul" else None
        )
        if dequantized is not None:
            weights, scale = dequantized
            column = nh.to_array(initializers[scale]).astype(np.float32)
            count = nh.to_array(initializers[weights]).shape[1]
            if column.shape != (1, count):
                return False  # not one scale per column
            added.append(nh.from_array(column.reshape(count), f"{scale}_column"))
            nodes.append(
                helper.make_node(
                    "DynamicQuantizeMatMul",
                    [node.input[0], weights, f"{scale}_column"],
                    list(node.output),
                    name=f"{node.name}_integer",
                    domain=_MS,
                )
            )
            changed += 1
            continue
        table = _dequantized(node.input[0], producer, initializers) if node.op_type == "Gather" else None
        if table is not None and _attr(node, "axis", 0) == 0 and _rows_scaled(table, initializers):
            weights, scale = table
            out = node.output[0]
            nodes += [
                helper.make_node("Gather", [weights, node.input[1]], [f"{out}_int8"], axis=0),
                helper.make_node("Gather", [scale, node.input[1]], [f"{out}_scale"], axis=0),
                helper.make_node("Cast", [f"{out}_int8"], [f"{out}_float"], to=1),  # FLOAT
                helper.make_node("Mul", [f"{out}_float", f"{out}_scale"], [out]),
            ]
            changed += 1
            continue
        nodes.append(node)
    if not changed:
        return False
    if products:  # one text a call then: no padded rows, whose softmax the guards zero
        nodes = _without_nan_guards(nodes, producer)
    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.extend(added)
    _drop_unused(graph)
    return True


def _dequantized(name: str, producer: dict[str, Any], initializers: dict[str, Any]) -> tuple[str, str] | None:
    """(int8 weights, scale) when `name` is Mul(Cast(int8 initializer), scale initializer)."""
    mul = producer.get(name)
    if mul is None or mul.op_type != "Mul" or mul.input[1] not in initializers:
        return None
    cast = producer.get(mul.input[0])
    if cast is None or cast.op_type != "Cast" or cast.input[0] not in initializers:
        return None
    if initializers[cast.input[0]].data_type != 3:  # INT8
        return None
    return cast.input[0], mul.input[1]


def _rows_scaled(table: tuple[str, str], initializers: dict[str, Any]) -> bool:
    rows = initializers[table[0]].dims[0]
    return list(initializers[table[1]].dims) == [rows, 1]


def _attr(node: Any, name: str, default: int) -> int:
    return next((int(a.i) for a in node.attribute if a.name == name), default)


def _without_nan_guards(nodes: list[Any], producer: dict[str, Any]) -> list[Any]:
    """Drop Where(IsNaN(p), 0, p) after a softmax: its output is p."""
    alias: dict[str, str] = {}
    for node in nodes:
        if node.op_type != "Where":
            continue
        guard, value = producer.get(node.input[0]), producer.get(node.input[2])
        if (
            getattr(guard, "op_type", "") == "IsNaN"
            and getattr(value, "op_type", "") == "Softmax"
            and getattr(guard, "input", [""])[0] == node.input[2]
        ):
            alias[node.output[0]] = node.input[2]
    kept = [node for node in nodes if node.output[0] not in alias]
    for node in kept:
        for i, name in enumerate(node.input):
            if name in alias:
                node.input[i] = alias[name]
    return kept


def _drop_unused(graph: Any) -> None:
    """Remove nodes and initializers no output depends on any more."""
    while True:
        used = _inputs(graph.node) | {output.name for output in graph.output}
        kept = [node for node in graph.node if any(output in used for output in node.output)]
        if len(kept) == len(graph.node):
            break
        del graph.node[:]
        graph.node.extend(kept)
    initializers = [i for i in graph.initializer if i.name in used]
    del graph.initializer[:]
    graph.initializer.extend(initializers)


def _inputs(nodes: Iterable[Any]) -> set[str]:
    return {name for node in nodes for name in node.input}
