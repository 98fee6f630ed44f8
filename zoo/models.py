"""Whole-model benchmarks: the same model on torch's layers and after zoo.nn.convert, side by
side in one process (`zoo bench --model llama|resnet50|mlp-train`).

Every model has random weights (nothing is downloaded): a Llama of about 1B parameters
(transformers), torchvision's ResNet-50, and an MLP of 8 Linear(1024, 1024) layers trained
with SGD. llama-fp8 is the Llama in bf16 with its decoder's Linears in FP8
(zoo.nn.convert(fp8=recipe), the head kept in bf16): the same FP8 layers on torch._scaled_mm
against them on zoo.scaled_mm. Outputs are compared first; then each way of running (eager, a CUDA graph,
torch.compile) is timed for both models in alternating repeats (the host drifts), and the
median of each is reported. Times are wall clock per call after a synchronize: the host's
share counts, as it does for a user (bench.wall_side_by_side).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import Callable

import torch

from . import bench, conv, convnets, scaled
from . import nn as zoo_nn
from .cuda import ZooError

MODELS = ("llama", "llama-fp8", "resnet50", "mlp-train")


@dataclass
class Row:
    """One way of running one model: torch's and the zoo's median ms, and the outputs' check."""
    model: str
    case: str
    torch_ms: float
    zoo_ms: float
    check: str = ""
    spreads: tuple[float, float] = (0.0, 0.0)

    @property
    def speedup(self) -> float:
        """torch's time over the zoo's: above 1, the zoo is faster."""
        return self.torch_ms / self.zoo_ms


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    swaps: dict[str, str] = field(default_factory=dict)   # model: "swapped N of M layers"
    notes: list[str] = field(default_factory=list)


def relative_error(x: torch.Tensor, y: torch.Tensor) -> float:
    return bench.relative_error(x, y.double())


def converted(model: torch.nn.Module) -> tuple[torch.nn.Module, str]:
    """A deep copy of `model` with its layers on the zoo, and a line saying how many."""
    mine = copy.deepcopy(model)
    swaps = zoo_nn.convert(mine)
    left = [s for s in swaps if not s.swapped]
    line = f"{len(swaps) - len(left)} of {len(swaps)} Linear/Conv2d layers on the zoo"
    if left:
        line += "; left: " + ", ".join(f"{s.name} ({s.reason})" for s in left[:3]) + (" ..." if len(left) > 3 else "")
    return mine, line


def _graphed(fn: Callable[[], object]) -> Callable[[], object]:
    """fn captured once into a CUDA graph (after a warm-up on a side stream), replayed after."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()
    return lambda: (graph.replay(), out)[1]


# ----------------------------------------------------------------------------- models

def llama_model(dtype: torch.dtype, layers: int = 16) -> torch.nn.Module:
    """A Llama of about 1.2B parameters at 16 layers (Llama 3.2 1B's shape, a 32000 vocabulary),
    random weights."""
    try:
        import transformers
    except ImportError as exc:
        raise ZooError("--model llama needs transformers (pip install 'zoo[models]')") from exc
    config = transformers.LlamaConfig(hidden_size=2048, intermediate_size=8192, num_hidden_layers=layers,
                                      num_attention_heads=32, num_key_value_heads=8, vocab_size=32000,
                                      max_position_embeddings=2048, attn_implementation="sdpa")
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(config).to("cuda", dtype).eval()


def _torchvision_model(name: str):
    """torchvision's constructor of CNN `name` (random weights: nothing is downloaded)."""
    try:
        import torchvision
    except ImportError as exc:
        raise ZooError(f"--model {name} needs torchvision (pip install 'zoo[models]')") from exc
    build = getattr(torchvision.models, name, None)
    if not callable(build):
        raise ZooError(f"torchvision has no model {name!r} (e.g. resnet50, densenet121, vgg16)")
    return build


def cnn_model(name: str, dtype: torch.dtype) -> torch.nn.Module:
    """torchvision's CNN `name` on the GPU in `dtype`, channels-last, for inference."""
    build = _torchvision_model(name)
    torch.manual_seed(0)
    return build(weights=None).to("cuda", dtype).to(memory_format=torch.channels_last).eval()


@dataclass
class LayerTiming:
    """One distinct convolution of a network, timed alone against cuDNN (None: not run)."""
    layer: "convnets.NetworkLayer"
    zoo_ms: float | None = None
    cudnn_ms: float | None = None
    verified: bool | None = None
    kernel: str = ""


def conv_layers(name: str, dtype: torch.dtype, batch: int, warmup: int, iters: int,
                progress: Callable[[str], None] = print) -> list[LayerTiming]:
    """Every distinct convolution of torchvision's `name` at `batch` x 3 x 224 x 224, each
    verified and timed side by side with cuDNN (conv.measure: CUDA-graph replays,
    cudnn.benchmark on); a layer the zoo cannot run is listed with its reason, not timed."""
    with torch.device("meta"):
        meta = _torchvision_model(name)(weights=None).to(dtype)
    rows = []
    for layer in convnets.network_layers(meta, (batch, 3, 224, 224)):
        row = LayerTiming(layer)
        if not layer.refusal:
            progress(f"{name}: {layer.name}")
            try:
                timings, check, kernel, config = conv.measure(layer.shape, dtype, None, warmup, iters)
            except ZooError as exc:  # a shape no conv kernel takes: reported, the others still run
                row.layer = replace(layer, refusal=str(exc))
            else:
                row.zoo_ms, row.cudnn_ms = timings["zoo"].median_ms, timings["cudnn"].median_ms
                row.verified, row.kernel = check.ok, f"{kernel} / {config}"
        rows.append(row)
    return rows


def bench_llama(report: Report, dtype: torch.dtype, calls: int, repeats: int, layers: int = 16,
                progress: Callable[[str], None] = print) -> None:
    ref = llama_model(dtype, layers)
    mine, report.swaps["llama"] = converted(ref)
    gen = torch.Generator(device="cuda").manual_seed(1)
    prompt = torch.randint(0, ref.config.vocab_size, (4, 512), device="cuda", generator=gen)
    with torch.inference_mode():
        want, got = ref(prompt).logits, mine(prompt).logits
        agree = (want.argmax(-1) == got.argmax(-1)).float().mean().item()
        check = f"rel. error {relative_error(got, want):.1e}, next-token agreement {100 * agree:.1f}%"
        progress("llama: prefill eager")
        report.rows.append(Row("llama", "prefill 4x512, eager", **_pair(lambda: mine(prompt).logits,
                                                                      lambda: ref(prompt).logits, calls, repeats),
                               check=check))
        progress("llama: prefill compiled")
        c_mine, c_ref = torch.compile(mine), torch.compile(ref)
        report.rows.append(Row("llama", "prefill 4x512, torch.compile", **_pair(lambda: c_mine(prompt).logits,
                                                                              lambda: c_ref(prompt).logits,
                                                                              calls, repeats)))
        torch._dynamo.reset()
        one = prompt[:1, :32]
        for name, compiled_mode in (("decode 64 tokens, eager", None), ("decode 64 tokens, static cache, "
                                                                        "reduce-overhead", "reduce-overhead")):
            progress(f"llama: {name}")
            dec_mine, dec_ref = (_decoder(m, one, 64, compiled_mode) for m in (mine, ref))
            tokens_mine, tokens_ref = dec_mine(), dec_ref()
            differ = (tokens_mine != tokens_ref).flatten().nonzero()
            same = int(differ[0]) if len(differ) else tokens_ref.numel()
            report.rows.append(Row("llama", name, **_pair(dec_mine, dec_ref, 1, repeats),
                                   check=f"greedy tokens identical for the first {same} of {tokens_ref.numel()} "
                                         "(random weights: near-ties)"))
            torch._dynamo.reset()


def fp8_pair(model: torch.nn.Module, recipe: str) -> tuple[torch.nn.Module, torch.nn.Module, str]:
    """Two FP8 copies of `model` (zoo.nn.convert(fp8=recipe), the head left in bf16): on
    torch._scaled_mm and on zoo.scaled_mm, with a line saying how many layers are FP8."""
    pair = []
    for backend in ("torch", "zoo"):
        copied = copy.deepcopy(model)
        swaps = zoo_nn.convert(copied, fp8=recipe, skip=("lm_head",))
        for m in copied.modules():
            if isinstance(m, zoo_nn.Float8Linear):
                m.backend = backend
        pair.append(copied)
    line = f"{sum(s.swapped for s in swaps)} of {len(swaps)} Linear layers in FP8 ({recipe} scales), the head in bf16"
    return *pair, line


def bench_llama_fp8(report: Report, dtype: torch.dtype, calls: int, repeats: int, layers: int = 16,
                    progress: Callable[[str], None] = print, recipe: str = "row") -> None:
    """The Llama in `dtype` (run passes bf16) with its decoder's Linears in FP8:
    torch._scaled_mm's layers against zoo.scaled_mm's, prefill eager and compiled, greedy
    decoding with a static cache under reduce-overhead; and the compiled FP8 prefill on the
    zoo against the compiled model in `dtype`."""
    cc = torch.cuda.get_device_capability()
    if cc != scaled.FP8_CC:
        report.notes.append(f"llama-fp8 not run: FP8 GEMMs need CC 9.0 (Hopper), this GPU is {cc[0]}.{cc[1]}")
        return
    ref = llama_model(dtype, layers)
    theirs, mine, report.swaps["llama-fp8"] = fp8_pair(ref, recipe)
    gen = torch.Generator(device="cuda").manual_seed(1)
    prompt = torch.randint(0, ref.config.vocab_size, (4, 512), device="cuda", generator=gen)
    tag = f"FP8 {recipe}"
    with torch.inference_mode():
        bf16, want, got = ref(prompt).logits, theirs(prompt).logits, mine(prompt).logits
        agree = (want.argmax(-1) == got.argmax(-1)).float().mean().item()
        check = f"vs torch's FP8: rel. error {relative_error(got, want):.1e}, next-token agreement " \
                f"{100 * agree:.1f}%; vs bf16: zoo {relative_error(got, bf16):.1e}, torch {relative_error(want, bf16):.1e}"
        progress("llama-fp8: prefill eager")
        report.rows.append(Row("llama-fp8", f"{tag}, prefill 4x512, eager",
                               **_pair(lambda: mine(prompt).logits, lambda: theirs(prompt).logits, calls, repeats),
                               check=check))
        progress("llama-fp8: prefill compiled")
        c_mine, c_theirs, c_bf16 = torch.compile(mine), torch.compile(theirs), torch.compile(ref)
        report.rows.append(Row("llama-fp8", f"{tag}, prefill 4x512, torch.compile",
                               **_pair(lambda: c_mine(prompt).logits, lambda: c_theirs(prompt).logits, calls,
                                       repeats)))
        report.rows.append(Row("llama-fp8", f"{tag} on the zoo vs bf16 torch.mm, prefill 4x512, torch.compile",
                               **_pair(lambda: c_mine(prompt).logits, lambda: c_bf16(prompt).logits, calls,
                                       repeats)))
        torch._dynamo.reset()
        one = prompt[:1, :32]
        name = f"{tag}, decode 64 tokens, static cache, reduce-overhead"
        progress(f"llama-fp8: {name}")
        dec_mine, dec_theirs = (_decoder(m, one, 64, "reduce-overhead") for m in (mine, theirs))
        tokens_mine, tokens_theirs = dec_mine(), dec_theirs()
        differ = (tokens_mine != tokens_theirs).flatten().nonzero()
        same = int(differ[0]) if len(differ) else tokens_theirs.numel()
        report.rows.append(Row("llama-fp8", name, **_pair(dec_mine, dec_theirs, 1, repeats),
                               check=f"greedy tokens identical to torch FP8's for the first {same} of "
                                     f"{tokens_theirs.numel()} (random weights: near-ties)"))
        torch._dynamo.reset()


def _decoder(model, prompt: torch.Tensor, tokens: int, mode: str | None) -> Callable[[], torch.Tensor]:
    """Greedy decoding of `tokens` tokens at batch 1 after `prompt`: eager with transformers'
    dynamic cache, or with a static cache and the step compiled in `mode`."""
    import transformers
    if mode is None:
        def run():
            cache = transformers.DynamicCache()
            out = model(prompt, past_key_values=cache, use_cache=True)
            ids = [out.logits[:, -1].argmax(-1, keepdim=True)]
            for _ in range(tokens - 1):
                out = model(ids[-1], past_key_values=cache, use_cache=True)
                ids.append(out.logits[:, -1].argmax(-1, keepdim=True))
            return torch.cat(ids, 1)
        return run
    cache = transformers.StaticCache(config=model.config, max_batch_size=1, max_cache_len=prompt.shape[1] + tokens,
                                     device="cuda", dtype=model.dtype)
    step = torch.compile(lambda ids, pos: model(ids, past_key_values=cache, cache_position=pos, use_cache=True).logits,
                         mode=mode)

    def run():
        cache.reset()
        logits = model(prompt, past_key_values=cache, cache_position=torch.arange(prompt.shape[1], device="cuda"),
                       use_cache=True).logits
        ids = [logits[:, -1].argmax(-1, keepdim=True)]
        for i in range(tokens - 1):
            pos = torch.tensor([prompt.shape[1] + i], device="cuda")
            ids.append(step(ids[-1], pos)[:, -1].argmax(-1, keepdim=True).clone())
        return torch.cat(ids, 1)
    return run


def bench_cnn(report: Report, dtype: torch.dtype, calls: int, repeats: int, batch: int = 32,
              progress: Callable[[str], None] = print, name: str = "resnet50", compiled: bool = True) -> None:
    """torchvision's CNN `name` at batch x 3 x 224 x 224, channels-last: torch's layers against
    zoo.nn.convert's, eager, from a CUDA graph and (compiled) under torch.compile."""
    ref = cnn_model(name, dtype)
    mine, report.swaps[name] = converted(ref)
    gen = torch.Generator(device="cuda").manual_seed(2)
    x = torch.randn(batch, 3, 224, 224, device="cuda", dtype=dtype, generator=gen).to(memory_format=torch.channels_last)
    torch.backends.cudnn.benchmark = True
    with torch.inference_mode():
        want, got = ref(x), mine(x)
        check = f"rel. error {relative_error(got, want):.1e}, top-1 equal " \
                f"{100 * (want.argmax(1) == got.argmax(1)).float().mean().item():.0f}%"
    with torch.no_grad():
        progress(f"{name}: eager")
        report.rows.append(Row(name, f"batch {batch}, eager", **_pair(lambda: mine(x), lambda: ref(x), calls,
                                                                    repeats), check=check))
        progress(f"{name}: CUDA graph")
        g_mine, g_ref = _graphed(lambda: mine(x)), _graphed(lambda: ref(x))
        report.rows.append(Row(name, f"batch {batch}, CUDA graph", **_pair(g_mine, g_ref, calls, repeats)))
        if compiled:
            progress(f"{name}: torch.compile")
            c_mine, c_ref = torch.compile(mine), torch.compile(ref)
            report.rows.append(Row(name, f"batch {batch}, torch.compile", **_pair(lambda: c_mine(x),
                                                                                lambda: c_ref(x), calls, repeats)))
            torch._dynamo.reset()


def mlp(dtype: torch.dtype, width: int = 1024, layers: int = 8) -> torch.nn.Module:
    torch.manual_seed(3)
    parts = []
    for _ in range(layers):
        parts += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*parts[:-1]).to("cuda", dtype)


def bench_mlp_train(report: Report, dtype: torch.dtype, calls: int, repeats: int,
                    progress: Callable[[str], None] = print) -> None:
    """A training step (forward, backward, SGD) of 8 Linear(1024, 1024): batch 16 (host-bound)
    and 8192 (device-bound on a fast host), each eager and replayed from a CUDA graph (the
    device's time alone)."""
    for batch in (16, 8192):
        ref = mlp(dtype)
        mine, report.swaps["mlp-train"] = converted(ref)
        gen = torch.Generator(device="cuda").manual_seed(4)
        x = torch.randn(batch, 1024, device="cuda", dtype=dtype, generator=gen)
        steps = []
        for model in (mine, ref):
            opt = torch.optim.SGD(model.parameters(), lr=1e-3)

            def step(model=model, opt=opt):
                opt.zero_grad(set_to_none=True)
                model(x).float().square().mean().backward()
                opt.step()
            steps.append(step)
        grads = []
        exact = copy.deepcopy(ref).double()
        for model, data in ((exact, x.double()), (ref, x), (mine, x)):
            model.zero_grad(set_to_none=True)
            model(data).float().square().mean().backward()
            grads.append(model[0].weight.grad.clone())
        check = f"first layer's weight gradient against float64: torch {relative_error(grads[1], grads[0]):.1e}, " \
                f"zoo {relative_error(grads[2], grads[0]):.1e}"
        progress(f"mlp-train: batch {batch}")
        report.rows.append(Row("mlp-train", f"8 x Linear(1024, 1024) bf16, batch {batch}, eager step",
                               **_pair(steps[0], steps[1], calls, repeats), check=check))
        # The device's share alone: the whole step replayed from a CUDA graph (each step sets its
        # gradients to None first, so the captured backward makes them in the graph's pool).
        report.rows.append(Row("mlp-train", f"8 x Linear(1024, 1024) bf16, batch {batch}, step from a CUDA graph",
                               **_pair(_graphed(steps[0]), _graphed(steps[1]), calls, repeats)))


def _pair(mine, theirs, calls, repeats) -> dict:
    """Row fields for the zoo's `mine` and torch's `theirs`: wall-clock ms per call, `calls`
    calls a sample, the two taking turns for `repeats` samples (bench.wall_side_by_side)."""
    timings = bench.wall_side_by_side({"torch": lambda i: theirs(), "zoo": lambda i: mine()}, 1, 1, repeats,
                                      calls=calls)
    t, z = timings["torch"], timings["zoo"]
    return {"torch_ms": t.median_ms, "zoo_ms": z.median_ms, "spreads": (t.spread, z.spread)}


def run(models: list[str], dtype: torch.dtype = torch.float16, calls: int = 10, repeats: int = 7,
        progress: Callable[[str], None] = print, recipe: str = "row") -> Report:
    """Each model in `models` (MODELS), timed side by side; `recipe`: llama-fp8's FP8 scales."""
    report = Report()
    benches = {"llama": bench_llama, "llama-fp8": bench_llama_fp8, "resnet50": bench_cnn,
               "mlp-train": bench_mlp_train}
    for name in models:
        if name not in benches:
            raise ZooError(f"--model must be one of {', '.join(MODELS)}, got {name!r}")
        extra = {"recipe": recipe} if name == "llama-fp8" else {}
        benches[name](report, torch.bfloat16 if name in ("mlp-train", "llama-fp8") else dtype, calls, repeats,
                      progress=progress, **extra)
    return report
