"""engine_check/stubs: fake modules for what the engines import but a CPU-only check does not run (torch,
triton, transformer_engine, ...). Every attribute of a stub is another stub; nothing here is engine code."""
import importlib.abc
import importlib.machinery
import sys
import types


class _Stub(types.ModuleType):
    """A module/class/function stand-in: any attribute, call, subscript or base-class use yields a stub."""

    __path__ = []  # a package, so `import torch.x.y` works

    def __init__(self, name="stub"):
        super().__init__(name)

    def __getattr__(self, attr):
        if attr.startswith("__") and attr not in ("__version__",):
            raise AttributeError(attr)
        if attr == "__version__":
            return "2.9.0"
        child = _Stub(f"{self.__name__}.{attr}")
        setattr(self, attr, child)
        return child

    def __call__(self, *a, **k):
        if len(a) == 1 and callable(a[0]) and not k and not isinstance(a[0], _Stub):
            return _Wrapped(a[0])  # decorator use: keep the function, accept .register_fake etc.
        return _Stub(f"{self.__name__}()")

    def __getitem__(self, k):
        return self

    def __iter__(self):
        return iter(())

    def __bool__(self):
        return False

    def __mro_entries__(self, bases):
        return ()

    def __or__(self, other):
        return self

    __ror__ = __or__

    def __eq__(self, other):
        return self is other

    def __hash__(self):
        return id(self)

    def __lt__(self, other):
        return False

    __le__ = __gt__ = __ge__ = __lt__

    def __int__(self):
        return 0

    def __index__(self):
        return 0


class _Wrapped(_Stub):
    """A real function under a stubbed decorator: calls go to the function, attributes are stubs."""

    def __init__(self, fn):
        super().__init__(getattr(fn, "__name__", "fn"))
        self._fn = fn

    def __call__(self, *a, **k):
        return self._fn(*a, **k)

    def __get__(self, obj, objtype=None):
        return self if obj is None else (lambda *a, **k: self._fn(obj, *a, **k))


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, roots):
        self.roots = set(roots)

    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in self.roots:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        return _Stub(spec.name)

    def exec_module(self, module):
        pass


def install(roots):
    """Stubs every module whose top-level name is in `roots` (they must not be importable for real)."""
    sys.meta_path.insert(0, _Finder(roots))


def install_modules(names):
    """Stubs individual (sub)modules, e.g. one an older Debian package lacks (numpy.dtypes before numpy 1.25)."""
    for name in names:
        if name not in sys.modules:
            try:
                importlib.import_module(name)
            except ImportError:
                sys.modules[name] = _Stub(name)


class _Dtype:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"


def torch_basics():
    """Gives the torch stub what argument code inspects: real types for isinstance() and dtype objects."""
    import torch  # the stub

    torch.dtype = _Dtype
    for n in ("float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "int8", "int32", "int64",
              "uint8", "bool", "float64"):
        setattr(torch, n, _Dtype(n))
    torch.float = torch.float32
    torch.half = torch.float16
    torch.Tensor = type("Tensor", (), {})
    torch.device = type("device", (), {"__init__": lambda self, *a, **k: None})
    torch.Size = tuple
    return torch
