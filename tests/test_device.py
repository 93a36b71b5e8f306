"""Device idioms of torch scripts on minigrad's CPU-only engine: each idiom is written once and
run with torch and with minigrad in its place (the script's `torch`), and every request for a
device or dtype minigrad lacks is refused with an error naming it."""

import importlib
import warnings
from contextlib import nullcontext

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from tests.parity import assert_close, raises_like_torch

# compares with PyTorch: skipped without it (pip install torch==2.13.0; CI installs it)
torch = pytest.importorskip("torch")

LIBRARIES = {"torch": torch, "minigrad": mg}


@pytest.fixture
def flags_restored():
    """The backends flags a script sets, put back afterwards in both libraries. (By hand, not
    with monkeypatch: torch's cuda.matmul answers allow_tf32 through __getattr__, which some
    pytest versions cannot undo.)"""
    saved = {}
    for name, library in LIBRARIES.items():
        cudnn = library.backends.cudnn
        saved[name] = (
            library.get_float32_matmul_precision(),
            library.backends.cuda.matmul.allow_tf32,
            {flag: getattr(cudnn, flag) for flag in ("allow_tf32", "benchmark", "deterministic")},
        )
        library.backends.cuda.matmul.allow_tf32 = False
    yield
    for name, library in LIBRARIES.items():
        precision, matmul_tf32, cudnn_flags = saved[name]
        library.set_float32_matmul_precision(precision)
        library.backends.cuda.matmul.allow_tf32 = matmul_tf32
        for flag, value in cudnn_flags.items():
            setattr(library.backends.cudnn, flag, value)


def nanogpt_style_step(torch, weight, x, target):
    """train.py's device choice and one step with its context, scaler and clipping."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    device_type = "cuda" if "cuda" in device else "cpu"
    torch.manual_seed(1337)
    torch.cuda.manual_seed_all(1337)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    bf16 = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    dtype = "bfloat16" if bf16 else "float16"
    ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
    ctx = (
        nullcontext()
        if device_type == "cpu"
        else torch.amp.autocast(device_type=device_type, dtype=ptdtype[dtype])
    )
    with warnings.catch_warnings(record=True):  # both warn: a CUDA scaler without CUDA
        warnings.simplefilter("always")
        scaler = torch.cuda.amp.GradScaler(enabled=(dtype == "float16"))
    model = torch.nn.Linear(3, 2, bias=False).to(device)
    with torch.no_grad():
        model.weight.copy_(torch.tensor(weight))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, target = torch.tensor(x, device=device), torch.tensor(target).to(device)
    with ctx:
        loss = torch.nn.functional.cross_entropy(model(x), target)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    return device, dtype, scaler.get_scale(), loss.item(), model.weight.detach().numpy().copy()


@pytest.mark.usefixtures("flags_restored")
def test_nanogpt_style_setup_and_step_take_the_cpu_path_with_torchs_numbers():
    rng = np.random.default_rng(0)
    arrays = (
        rng.standard_normal((2, 3)).astype(np.float32),
        rng.standard_normal((4, 3)).astype(np.float32),
        np.array([0, 1, 1, 0]),
    )
    theirs = nanogpt_style_step(torch, *arrays)
    ours = nanogpt_style_step(mg, *arrays)
    assert ours[:3] == theirs[:3] == ("cpu", "float16", 1.0)
    assert_close(ours[3], theirs[3], 1e-6)  # a float32 loss, as a Python float
    assert_close(ours[4], theirs[4])
    assert mg.backends.cuda.matmul.allow_tf32 is True


class DcganStyleGenerator:
    """dcgan's forward: asks input.is_cuda before choosing data_parallel."""

    def __init__(self, torch, ngpu):
        self.torch, self.ngpu, self.main = torch, ngpu, torch.nn.Tanh()

    def forward(self, input):
        if input.is_cuda and self.ngpu > 1:
            raise AssertionError("the CPU path was expected")
        return self.main(input)


def test_dcgan_style_forward_asks_is_cuda():
    x = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
    outs = [DcganStyleGenerator(lib, 2).forward(lib.tensor(x)) for lib in (torch, mg)]
    assert_close(outs[1], outs[0])


@pytest.mark.parametrize("name", LIBRARIES)
def test_cpu_tensor_members_as_torch(name):
    library = LIBRARIES[name]
    x = library.zeros(2, 3, device=library.device("cpu"))
    assert x.is_cuda is False and x.is_xpu is False  # dcgan asks is_xpu too (issue 47)
    assert x.cpu() is x and x.to("cpu") is x and x.to(library.device("cpu")) is x
    assert x.device == library.device("cpu") and repr(x.device) == "device(type='cpu')"
    assert x.to(library.device("cpu"), library.float64).dtype == library.float64
    model = library.nn.Linear(2, 2).to(library.device("cpu"))
    assert next(model.parameters()).device.type == "cpu"
    assert library.cuda.is_available() is False and library.cuda.device_count() == 0
    assert library.backends.mps.is_available() is False
    assert library.backends.cudnn.benchmark is False
    assert library.Generator().device == library.device("cpu")
    assert x.is_pinned() is False and x.share_memory_() is x
    with pytest.raises(RuntimeError, match="accelerator"):  # pinned memory needs one
        x.pin_memory()


@pytest.mark.parametrize(
    "spec, text, kind, index",
    [
        (("cpu",), "cpu", "cpu", None),
        (("cuda",), "cuda", "cuda", None),
        (("cuda:1",), "cuda:1", "cuda", 1),
        (("cuda", 2), "cuda:2", "cuda", 2),
        (("mps",), "mps", "mps", None),
    ],
)
def test_device_objects_as_torchs(spec, text, kind, index):
    ours, theirs = mg.device(*spec), torch.device(*spec)
    assert (str(ours), repr(ours), ours.type, ours.index) == (
        str(theirs),
        repr(theirs),
        kind,
        index,
    )
    assert str(ours) == text and ours == mg.device(ours) and hash(ours) == hash(mg.device(*spec))
    assert (ours == text) is (theirs == text) is False  # a device is not equal to its string
    assert (mg.device("cpu:0") == mg.device("cpu")) is (
        torch.device("cpu:0") == torch.device("cpu")
    )


@pytest.mark.parametrize(
    "spec, words",
    [
        (("bogus",), ["bogus", "cpu, cuda"]),
        (("cuda:x",), ["cuda:x"]),
        (("cuda:-1",), ["cuda:-1"]),
        (("cpu:0:1",), ["cpu:0:1"]),
        (("cuda:0", 1), ["cuda:0", "index=1"]),
        ((0,), ["accelerator"]),
    ],
)
def test_bad_device_strings_are_refused_as_torch_refuses_them(spec, words):
    raises_like_torch(lambda: mg.device(*spec), lambda: torch.device(*spec), words)


CUDA_REQUESTS = {
    "zeros(device=)": lambda: mg.zeros(3, device="cuda"),
    "tensor(device=)": lambda: mg.tensor([1.0], device=mg.device("cuda:0")),
    "Tensor.to": lambda: mg.zeros(3).to("cuda"),
    "Tensor.to(device)": lambda: mg.zeros(3).to(mg.device("cuda", 1)),
    "Tensor.to(device=)": lambda: mg.zeros(3).to(device="cuda:0"),
    "Tensor.cuda": lambda: mg.zeros(3).cuda(),
    "Tensor.cuda(1)": lambda: mg.zeros(3).cuda(1),
    "Module.to": lambda: nn.Linear(2, 2).to(mg.device("cuda")),
    "Module.cuda": lambda: nn.Linear(2, 2).cuda(),
    "Module.cuda(0)": lambda: nn.Linear(2, 2).cuda(0),
    "cuda.current_device": lambda: mg.cuda.current_device(),
    "cuda.synchronize": lambda: mg.cuda.synchronize(),
}


@pytest.mark.parametrize("request_", CUDA_REQUESTS.values(), ids=CUDA_REQUESTS)
def test_asking_for_cuda_is_a_clear_error_naming_the_device(request_):
    with pytest.raises(ValueError, match=r"CPU only; got device .cuda"):
        request_()


def test_autocast_on_the_cpu_in_float32_changes_nothing():
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = mg.tensor(array, requires_grad=True)
    for context in (
        mg.autocast(device_type="cpu", dtype=mg.float32),
        mg.amp.autocast("cpu", dtype=mg.float64),
        mg.autocast("cpu", enabled=False),
        mg.autocast("cpu", dtype=mg.bfloat16, enabled=False),
    ):
        with context:
            y = (x @ x.T).sum()
        assert y.dtype == mg.float32 and y.item() == (array @ array.T).sum()
    decorated = mg.autocast("cpu", dtype=mg.float32)(lambda value: value * 2)
    assert decorated(3) == 6


def test_autocast_float32_matches_torchs_which_disables_itself():
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    results = []
    for library in (torch, mg):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with library.autocast(device_type="cpu", dtype=library.float32):
                t = library.tensor(x)
                results.append((t @ t.T).tanh())
    assert_close(results[1], results[0])
    assert results[1].dtype == mg.float32


@pytest.mark.parametrize(
    "options, words",
    [
        ({}, ["bfloat16", "torch's CPU default", "mg.float32"]),
        ({"dtype": mg.bfloat16}, ["bfloat16"]),
        ({"dtype": mg.float16}, ["float16"]),
        ({"dtype": mg.half}, ["float16"]),
        ({"dtype": mg.int64}, ["int64", "float32"]),
    ],
)
def test_autocast_to_a_dtype_minigrad_lacks_is_a_clear_error(options, words):
    with pytest.raises(mg.DTypeError) as error:
        mg.autocast("cpu", **options)
    for word in words:
        assert word in str(error.value)


def test_autocast_and_scaler_for_a_missing_device_disable_themselves_with_a_warning():
    with pytest.warns(UserWarning, match="'cuda'.*CPU only"):
        context = mg.autocast(device_type="cuda", dtype=mg.float16)
    assert context.enabled is False
    with pytest.warns(UserWarning, match="'cuda'"):
        scaler = mg.amp.GradScaler("cuda")
    assert not scaler.is_enabled() and scaler.get_scale() == 1.0 and scaler.state_dict() == {}
    with pytest.raises(mg.ArgumentError, match="bogus"):
        mg.autocast("bogus")


def test_a_missing_dtype_as_a_tensors_dtype_names_it():
    with pytest.raises(TypeError, match="minigrad has no bfloat16"):
        mg.zeros(2, dtype=mg.bfloat16)
    with pytest.raises(TypeError, match="minigrad has no float16"):
        mg.ones(2).to(mg.half)


def scaled_steps(library, scaler, weight, x, steps):
    parameter = library.tensor(weight, requires_grad=True)
    optimizer = library.optim.SGD([parameter], lr=0.1)
    for step in range(steps):
        loss = (parameter * library.tensor(x[step])).sum() ** 2
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    return parameter.detach().numpy().copy(), scaler.get_scale(), scaler.state_dict()


@pytest.mark.filterwarnings("ignore:invalid value")  # disabled, the inf step makes nans
@pytest.mark.parametrize("enabled", [True, False])
def test_a_cpu_grad_scaler_steps_backs_off_and_grows_as_torchs(enabled):
    x = np.ones((6, 3), dtype=np.float32)
    x[2, 1] = np.inf  # step 2's gradient is not finite: skipped, and the scale backs off
    weight = np.array([0.5, -0.25, 1.0], dtype=np.float32)
    options = {"init_scale": 8.0, "growth_interval": 2, "enabled": enabled}
    theirs = scaled_steps(torch, torch.amp.GradScaler("cpu", **options), weight, x, 6)
    ours = scaled_steps(mg, mg.amp.GradScaler("cpu", **options), weight, x, 6)
    assert_close(ours[0], theirs[0])
    assert ours[1] == theirs[1]
    assert {k: float(v) for k, v in ours[2].items()} == {k: float(v) for k, v in theirs[2].items()}


def test_grad_scaler_state_dict_round_trips_and_bad_settings_are_refused():
    scaler = mg.amp.GradScaler("cpu", init_scale=4.0, growth_interval=3)
    other = mg.amp.GradScaler("cpu")
    other.load_state_dict(scaler.state_dict())
    assert other.state_dict() == scaler.state_dict() and other.get_scale() == 4.0
    with pytest.raises(mg.ArgumentError, match="backoff_factor"):
        mg.amp.GradScaler("cpu", backoff_factor=2.0)


def test_compile_returns_the_model_itself_also_as_a_decorator():
    model = nn.Linear(2, 2)
    assert mg.compile(model) is model
    assert mg.compile(model, mode="max-autotune", fullgraph=True) is model

    @mg.compile
    def double(value):
        return value * 2

    @mg.compile(dynamic=True)
    def triple(value):
        return value * 3

    assert double(2) == 4 and triple(2) == 6


def test_cuda_seeds_and_cache_are_no_ops():
    mg.manual_seed(0)
    before = mg.randn(3).numpy()
    mg.manual_seed(0)
    assert mg.cuda.manual_seed(5) is None and mg.cuda.manual_seed_all(5) is None
    assert mg.cuda.empty_cache() is None and mg.cuda.is_bf16_supported() is False
    np.testing.assert_array_equal(mg.randn(3).numpy(), before)


def dcgan_style_imports_and_seeding(library_name):
    """dcgan's and imagenet's `import torch.backends.cudnn as cudnn`, mnist's device choice
    (PyTorch 2.6+ through torch.accelerator, older through mps/cuda), and the old amp imports."""
    cudnn = importlib.import_module(f"{library_name}.backends.cudnn")
    library = importlib.import_module(library_name)
    amp = importlib.import_module(f"{library_name}.cuda.amp")
    cudnn.benchmark = True
    library.manual_seed(999)
    use_accel = library.accelerator.is_available()
    device = library.accelerator.current_accelerator() if use_accel else library.device("cpu")
    use_mps = library.backends.mps.is_available()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scaler = amp.GradScaler(enabled=False)
    return (
        str(device),
        use_mps,
        library.backends.cudnn.benchmark,
        scaler.get_scale(),
        library.accelerator.device_count(),
        callable(amp.autocast),
    )


@pytest.mark.usefixtures("flags_restored")
def test_torchs_import_paths_and_device_choices_work_as_torchs():
    assert dcgan_style_imports_and_seeding("minigrad") == dcgan_style_imports_and_seeding("torch")


@pytest.mark.usefixtures("flags_restored")
@pytest.mark.parametrize("precision", ["highest", "high", "medium"])
def test_float32_matmul_precision_is_read_back_and_sets_tf32_as_torchs(precision):
    for library in (torch, mg):
        library.set_float32_matmul_precision(precision)
    assert mg.get_float32_matmul_precision() == torch.get_float32_matmul_precision() == precision
    assert mg.backends.cuda.matmul.allow_tf32 == torch.backends.cuda.matmul.allow_tf32


def test_a_bad_matmul_precision_is_refused_naming_it():
    with pytest.raises(mg.ArgumentError, match="'fast'"):
        mg.set_float32_matmul_precision("fast")
